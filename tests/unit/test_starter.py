"""`sparkfab init` writes a starter inventory that validates, for every size it offers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab.resolve import load_plan
from sparkfab.starter import SWITCH_MAX, starter

SIZES = [("pair", 2)] + [("ring", n) for n in range(3, 17)] + [("switch", n) for n in range(2, SWITCH_MAX + 1)]


@pytest.mark.parametrize("topology,n", SIZES, ids=lambda x: str(x))
def test_every_starter_validates_as_the_topology_it_names(tmp_path, topology, n):
    path = tmp_path / "inv.yml"
    path.write_text(starter(topology, n))
    plan = load_plan(str(path))
    assert len(plan.hosts) == n and plan.instances[0].tp == n
    want = {"pair": "pair", "ring": "triangle" if n == 3 else "ring", "switch": "switched"}[topology]
    assert plan.instances[0].topology == want
    assert plan.control_plane == ("fabric" if topology == "ring" else "management")


def test_a_starter_is_an_ansible_inventory(tmp_path):
    exe = shutil.which("ansible-inventory", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    assert exe
    for topology in ("pair", "ring", "switch"):
        path = tmp_path / f"{topology}.yml"
        path.write_text(starter(topology))
        out = subprocess.run([exe, "-i", str(path), "--list"], check=True, capture_output=True, text=True).stdout
        assert len(json.loads(out)["_meta"]["hostvars"]) == {"pair": 2, "ring": 4, "switch": 8}[topology]


def test_init_writes_a_new_file_and_refuses_what_it_did_not_write(cli, tmp_path):
    out = tmp_path / "ring.yml"
    res = cli("init", "ring", "--sparks", "6", "-o", str(out))
    assert res.code == 0 and "wrote" in res.err and "6 Sparks, 12 rails" in res.err
    assert cli("validate", str(out)).code == 0
    foreign = tmp_path / "mine.yml"
    foreign.write_text("keep me\n")
    res = cli("init", "pair", "-o", str(foreign))
    assert res.code == 2 and "exists and sparkfab did not write it" in res.err and foreign.read_text() == "keep me\n"
    assert cli("init", "switch").out == starter("switch")
    # a starter as init wrote it is init's to replace (another size, topology or name); once
    # its owner has edited it, it is theirs
    again = cli("init", "switch", "--sparks", "4", "--cluster", "lab-a", "-o", str(out))
    assert again.code == 0 and out.read_text() == starter("switch", 4, "lab-a")
    assert cli("init", "ring", "-o", str(out)).code == 0 and out.read_text() == starter("ring")
    out.write_text(out.read_text().replace("10.0.0.11", "10.9.0.11"))
    edited = cli("init", "ring", "-o", str(out))
    assert edited.code == 2 and "did not write it" in edited.err and "10.9.0.11" in out.read_text()


@pytest.mark.parametrize(
    "argv,message",
    [
        (("pair", "--sparks", "3"), "a pair is two Sparks"),
        (("switch", "--sparks", "9"), "2 to 8 Sparks on one CRS804"),
        (("ring", "--sparks", "1"), "--sparks"),
        (("mesh",), "invalid choice: 'mesh'"),
    ],
)
def test_init_names_what_it_cannot_make(cli, argv, message):
    res = cli("init", *argv)
    assert res.code == 2 and message in res.err, res.err


def test_a_bad_cluster_name_is_named_and_nothing_written(cli, tmp_path):
    out = tmp_path / "x.yml"
    res = cli("init", "pair", "--cluster", "Bad Name", "-o", str(out))
    assert res.code == 2 and "--cluster 'Bad Name': lower-case" in res.err and not out.exists()


def test_what_init_says_it_takes_is_what_it_takes(cli):
    """--sparks's help, its bounds and the starter's check read one table: every size the help
    gives for a topology is written, and every other size the parser takes is refused with the
    topology's range."""
    from sparkfab.starter import SIZES

    helped = " ".join(cli("init", "--help").out.split())
    for topology, (least, most, default) in SIZES.items():
        said = f"{topology} {least}" if least == most else f"{topology} {least}-{most} (default {default})"
        assert said in helped, helped
        for n in range(2, 17):
            res = cli("init", topology, "--sparks", str(n))
            assert (res.code == 0) == (least <= n <= most), (topology, n, res.err)
            if res.code != 0:
                assert res.code == 2 and f"--sparks {n}: " in res.err
