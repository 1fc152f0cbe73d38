"""The lab's plan without root: what `lab up --dry-run` says it would build, for every example
(namespaces, addresses, veths with their cable and root), pinned as golden files."""

from __future__ import annotations

import difflib

import pytest

from sparkfab.lab.spec import spec
from sparkfab.resolve import load_plan
from tests.conftest import EXAMPLES, REGEN, REPO

GOLDEN = REPO / "tests/golden/lab"


@pytest.mark.golden
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_lab_plan_of_every_example(cli, path, monkeypatch):
    """Regenerate with: SPARKFAB_REGEN=1 pytest tests/unit/lab/test_lab_plan.py"""
    monkeypatch.setenv("SPARKFAB_LAB_DIR", "/var/lib/sparkfab/lab")
    res = cli("lab", "up", str(path), "--dry-run")
    assert res.code == 0, res.err
    want = GOLDEN / f"{path.stem}.txt"
    if REGEN:
        want.write_text(res.out)
    diff = "".join(difflib.unified_diff(want.read_text().splitlines(True), res.out.splitlines(True), "golden", "now"))
    assert diff == "", diff


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_rail_is_one_veth_that_knows_its_cable_and_root(path):
    plan = load_plan(str(path))
    veths = spec(plan).veths
    rails = {(i.cable, i.root) for h in plan.hosts for i in h.ifaces}
    assert sorted((v.cable, v.root) for v in veths) == sorted(rails)
    assert all(v.label == f"cables[{v.cable}] root {v.root}" for v in veths)


def test_the_lab_inventory_and_its_recipes_are_written_only_when_they_change(tmp_path):
    """Every verb with --lab writes the lab's copy of the inventory; a read-only one beside a
    running apply must not rewrite what apply's Ansible reads."""
    import os

    from sparkfab.lab import inventory as lab_inv

    user = tmp_path / "site"
    (user / "launchers").mkdir(parents=True)
    (user / "pair.yml").write_text((REPO / "inventory/pair-1cable.yml").read_text())
    (user / "launchers/README.txt").write_text("notes of the site\n")
    into = tmp_path / "lab"
    into.mkdir()
    sp = spec(load_plan(str(user / "pair.yml")))
    out = lab_inv.write(str(user / "pair.yml"), sp, "collective", into)
    copy = into / "launchers/README.txt"
    before = (out.stat().st_mtime_ns, copy.stat().st_mtime_ns)
    os.utime(out, ns=(1, 1))
    os.utime(copy, ns=(1, 1))
    lab_inv.write(str(user / "pair.yml"), sp, "collective", into)
    assert (out.stat().st_mtime_ns, copy.stat().st_mtime_ns) == (1, 1) and before != (1, 1)
    (user / "launchers/README.txt").write_text("# changed\n")
    lab_inv.write(str(user / "pair.yml"), sp, "collective", into)
    assert copy.read_text() == "# changed\n" and out.stat().st_mtime_ns == 1


def test_a_host_outside_the_cluster_is_a_machine_of_the_lab_and_not_a_spark(tmp_path):
    """`[monitoring] prom1` beside a cluster group: the lab boots it (own namespace, management
    address, host key and ssh_config entry, reached as root) but it is no Spark (no veth, no
    lab inventory entry, no password sudo)."""
    import shutil

    from sparkfab.lab import keys
    from sparkfab.lab.image import LOGIN
    from sparkfab.lab.login import login_of

    d = tmp_path / "site"
    shutil.copytree(REPO / "tests/data/split/ring4-ini", d)
    gv = d / "group_vars/all.yml"
    gv.write_text(gv.read_text().replace("cluster: ring4", "cluster: ring4\n  group: sparks"))
    hosts = d / "hosts.ini"
    hosts.write_text(hosts.read_text() + "\n[monitoring]\nprom1 ansible_host=10.255.0.50\n")
    plan = load_plan(str(hosts))
    assert plan.left_out == ("prom1",)
    lab = spec(plan)
    prom = lab.node("prom1")
    assert prom.kind == "host" and prom.mgmt_ip and prom.ns == "sf-ring4-prom1"
    assert [n.name for n in lab.machines] == [*(h.name for h in plan.hosts), "prom1"]
    assert "prom1" not in {n.name for n in lab.sparks}
    assert not [v for v in lab.veths if "prom1" in (v.a_ns, v.b_ns) or v.b_ns.endswith("prom1")]
    assert len({n.mgmt_ip for n in lab.machines}) == 5 and prom.mgmt_ip != lab.root_ip
    assert login_of(lab, prom) == "root" and login_of(lab, lab.sparks[-1]) == LOGIN
    assert f"Host prom1 {prom.mgmt_ip}" in keys.ssh_config(lab)
