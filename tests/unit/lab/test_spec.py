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
def test_every_cable_is_one_wire_with_every_netdev_on_it(path):
    """One bridge per cable: both twins of each end's port, and the switch's port for its lane
    (named as the switch's OS names it), each a veth that knows its cable and root."""
    plan = load_plan(str(path))
    lab = spec(plan)
    twins = [v for v in lab.veths if v.kind == "twin"]
    netdevs = {(h.name, i.netdev, i.cable, i.root) for h in plan.hosts for i in h.ifaces}
    names = {n.ns: n.name for n in lab.nodes}
    assert sorted((names[v.a_ns], v.a_if, v.cable, v.root) for v in twins) == sorted(netdevs)
    assert all(v.label == f"cables[{v.cable}] root {v.root}" and v.bridge == f"c{v.cable}" for v in twins)
    for v in (v for v in lab.veths if v.kind == "switch"):
        on = {i.switch_port_id for h in plan.hosts for i in h.ifaces if i.cable == v.cable}
        assert on == {v.a_if} and v.bridge == f"c{v.cable}" and v.end == 1
    cables = {v.cable for v in lab.veths}
    assert {b for _, b, _ in lab.switch_bridges if b.startswith("c")} == {f"c{c}" for c in cables}


def test_the_lab_inventory_and_its_recipes_are_written_only_when_they_change(tmp_path):
    """Every verb with --lab writes the lab's copy of the inventory; a read-only one beside a
    running apply must not rewrite what apply's Ansible reads."""
    import os

    from sparkfab.lab import inventory as lab_inv
    from sparkfab.lab import serving

    user = tmp_path / "site"
    (user / "launchers").mkdir(parents=True)
    (user / "pair.yml").write_text((REPO / "inventory/pair-1cable.yml").read_text())
    (user / "launchers/README.txt").write_text("notes of the site\n")
    into = tmp_path / "lab"
    into.mkdir()
    sp = spec(load_plan(str(user / "pair.yml")))
    out = lab_inv.write(str(user / "pair.yml"), sp, serving.of("collective"), into)
    copy = into / "launchers/README.txt"
    before = (out.stat().st_mtime_ns, copy.stat().st_mtime_ns)
    os.utime(out, ns=(1, 1))
    os.utime(copy, ns=(1, 1))
    lab_inv.write(str(user / "pair.yml"), sp, serving.of("collective"), into)
    assert (out.stat().st_mtime_ns, copy.stat().st_mtime_ns) == (1, 1) and before != (1, 1)
    (user / "launchers/README.txt").write_text("# changed\n")
    lab_inv.write(str(user / "pair.yml"), sp, serving.of("collective"), into)
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
