"""One odd neighbour must not stop the checks of a cluster: a Spark of the lab sends the hostile
frame table (tests/helpers/hostile_frames.py) beside its lldpd, on a ring and behind a switch;
discover and verify end with a verdict (never an internal error or a hang), every line they print
shows what was heard escaped, nothing written holds a raw control byte, and what cannot be
trusted is named with the port it was heard on."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import yaml

from sparkfab.lab.daemons import PROBE
from sparkfab.lab.state import LabState
from sparkfab.paths import lab_dir
from tests.conftest import REPO
from tests.helpers.hostile_frames import table
from tests.helpers.lab import lab, requires_lab, sparkfab
from tests.lab.test_lab_first_contact import _sonic_pair

pytestmark = [pytest.mark.lab, requires_lab]

RAW = ("\x1b", "\x00", "\u202e", "\x07")


def _printable(text: str) -> bool:
    return all(line.isprintable() for line in text.splitlines())


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param("ring4", marks=pytest.mark.xdist_group("ring4")),
        pytest.param("switch", marks=pytest.mark.xdist_group("fcsonic")),
    ],
)
def test_hostile_frames_end_in_a_verdict_escaped_and_named(tmp_path, layout):
    inv, cluster = ("inventory/ring4.yml", "ring4") if layout == "ring4" else (_sonic_pair(tmp_path), "fcsonic")
    hosts = list(yaml.safe_load((REPO / inv).read_text())["all"]["hosts"])
    with lab(inv, cluster):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        spec = LabState.read(lab_dir(cluster)).spec
        sender = spec.node(hosts[0])
        other = spec.node(hosts[1]).hostname
        netdev = "enp1s0f0np0" if layout == "ring4" else "enp1s0f1np1"
        frames = [du.hex() for rows in table(other, "sonic").values() for du in rows]
        config = json.dumps({"send": {netdev: frames}, "every": 1, "seconds": 120})
        hostile = subprocess.Popen(["ip", "netns", "exec", sender.ns, sys.executable, "-I", str(PROBE), config])
        try:
            time.sleep(3)
            found = tmp_path / "found.yml"
            res = sparkfab("discover", "--inventory", inv, "--lab", "-o", str(found))
            assert res.code in (0, 4) and "internal error" not in res.err, res.err[-2000:]
            assert _printable(res.err) and not any(c in res.err for c in RAW)
            said = res.err
            assert "not trusted" in said or "several far ends" in said, said[-2000:]
            if found.exists():
                assert not any(c in found.read_text() for c in RAW)
            for fmt in ("json", "table"):
                checked = sparkfab("verify", inv, "--lab", "--format", fmt)
                assert checked.code in (0, 4) and "internal error" not in checked.err, checked.err[-2000:]
                assert not any(c in checked.out + checked.err for c in RAW)
            json.loads(sparkfab("verify", inv, "--lab", "--format", "json").out)
        finally:
            hostile.terminate()
            hostile.wait(10)
