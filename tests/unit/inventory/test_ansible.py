"""Inventories are read the way Ansible reads them (INI, groups, group_vars/, host_vars/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkfab import inventory
from sparkfab.errors import InventoryError
from sparkfab.inventory import ansible
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan, resolve
from tests.conftest import EXAMPLES, REPO

SPLIT = REPO / "tests/data/split"
RING4 = REPO / "inventory/ring4.yml"


def _plan_of(raw, source):
    inv, problems = inventory.parse_partial(raw, source)
    assert inv is not None and not problems
    return resolve(inv, raw, problems)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_plain_reader_agrees_with_ansible(path):
    """The fast reader of the single-file shape gives what Ansible's own machinery gives."""
    fast = _plan_of(inventory.load_raw(path), str(path))
    slow = _plan_of(*ansible.read(path))
    assert fast.to_dict() == slow.to_dict()
    assert {h.name: h.ansible for h in fast.hosts} == {h.name: h.ansible for h in slow.hosts}
    assert [h.name for h in fast.hosts] == [h.name for h in slow.hosts]


@pytest.mark.parametrize("layout", ["ring4-ini/hosts.ini", "ring4-groups/inventory.yml", "ring4-groups"])
def test_a_split_inventory_gives_the_single_file_plan(layout):
    single, split = load_plan(str(RING4)), load_plan(str(SPLIT / layout))
    # the same plan; the split one keeps its group for --limit
    assert split.groups["sparks"] == ("spark-329f", "spark-355d", "spark-3d38", "spark-c049")
    assert _without_groups(split.to_dict()) == _without_groups(single.to_dict())
    # what lands on the hosts is the same, file by file
    assert render(split).hosts == render(single).hosts
    # the group's login settings reach every host, a host's own wins
    for h in split.hosts:
        assert h.ansible["ansible_user"] == "ops"
        assert str(h.ansible["ansible_become"]).lower() == "true"
    assert split.host("spark-3d38").ansible["ansible_port"] == 2222
    assert "ansible_port" not in split.host("spark-329f").ansible
    assert "rack" not in split.host("spark-3d38").ansible  # the user's own variable is left alone


def _without_groups(data):
    """A plan without what only an inventory with groups and login settings has."""
    return {**data, "groups": {}, "hosts": [{**h, "groups": [], "ansible": {}} for h in data["hosts"]]}


def test_group_level_login_settings_reach_every_host_of_a_plain_file(tmp_path):
    text = RING4.read_text().replace("  vars:\n", "  vars:\n    ansible_user: ops\n", 1)
    text = text.replace(
        "spark-3d38: {ansible_host: 10.0.0.14}", "spark-3d38: {ansible_host: 10.0.0.14, ansible_user: me}"
    )
    (tmp_path / "inv.yml").write_text(text)
    plan = load_plan(str(tmp_path / "inv.yml"))
    assert {h.name: h.ansible["ansible_user"] for h in plan.hosts} == {
        "spark-329f": "ops",
        "spark-355d": "ops",
        "spark-c049": "ops",
        "spark-3d38": "me",
    }


def _copy(tmp_path: Path, layout: str) -> Path:
    shutil.copytree(SPLIT / layout, tmp_path / layout)
    return tmp_path / layout


def test_problems_in_group_vars_point_at_their_file_and_line(tmp_path, monkeypatch):
    d = _copy(tmp_path, "ring4-ini")
    gv = d / "group_vars/all.yml"
    gv.write_text(gv.read_text().replace("  mtu: 9000\n", "  mtuu: 9000\n"))
    (d / "host_vars/spark-329f.yml").write_text("rnak: 2\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InventoryError) as exc:
        load_plan("ring4-ini/hosts.ini")
    assert exc.value.render().splitlines()[:4] == [
        "ring4-ini/group_vars/all.yml: 2 problem(s) in the inventory",
        "ring4-ini/host_vars/spark-329f.yml:1: all.hosts.spark-329f.rnak: unknown key 'rnak'",
        "    hint: did you mean 'rank'? (known keys: ansible_host, mgmt_if, rank)",
        "ring4-ini/group_vars/all.yml:5: all.vars.sparkfab.mtuu: unknown key 'mtuu'",
    ]


def test_a_sparkfab_block_that_differs_between_hosts_is_refused(tmp_path):
    d = _copy(tmp_path, "ring4-ini")
    (d / "host_vars/spark-329f.yml").write_text("sparkfab: {cluster: other}\n")
    with pytest.raises(InventoryError) as exc:
        load_plan(str(d / "hosts.ini"))
    assert [p.render() for p in exc.value.problems] == [
        "all.vars.sparkfab: differs between hosts (e.g. on spark-329f)\n"
        "    hint: write the sparkfab block once, in the vars of the cluster's group (all.vars, [sparks:vars], "
        "group_vars/sparks.yml), and name that group in it (group: sparks) when other hosts share the inventory"
    ]


def test_no_sparkfab_block_anywhere(tmp_path):
    d = _copy(tmp_path, "ring4-ini")
    (d / "group_vars/all.yml").unlink()
    with pytest.raises(InventoryError) as exc:
        load_plan(str(d / "hosts.ini"))
    assert [p.message for p in exc.value.problems] == ["no 'sparkfab' block"]


def test_an_ini_file_ansible_cannot_read(tmp_path):
    (tmp_path / "hosts.ini").write_text("[sparks\nspark-a\n")
    with pytest.raises(InventoryError) as exc:
        load_plan(str(tmp_path / "hosts.ini"))
    assert exc.value.exit_code == 2
    assert exc.value.problems[0].message.startswith("Ansible cannot read it as an inventory:")


def test_the_cli_reads_an_inventory_directory(cli):
    res = cli("validate", str(SPLIT / "ring4-groups"))
    assert res.code == 0, res.err
    assert "4 Sparks, 8 rails" in res.err


def test_reading_with_ansible_leaves_this_process_alone():
    """Importing Ansible patches the importing process (sys.intern, which torch refuses): the
    read happens in a child, and this process never imports Ansible."""
    import subprocess
    import sys

    code = (
        "import sys; from sparkfab.resolve import load_plan; "
        f"p = load_plan({str(SPLIT / 'ring4-ini/hosts.ini')!r}); "
        "assert len(p.hosts) == 4; print(sorted(m for m in sys.modules if m.split('.')[0] == 'ansible'))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_a_host_without_cable_or_instance_is_left_out_and_a_missing_group_is_refused(tmp_path):
    d = _copy(tmp_path, "ring4-ini")
    (d / "hosts.ini").write_text((d / "hosts.ini").read_text() + "\n[monitoring]\nprom1 ansible_host=10.0.0.50\n")
    gv = d / "group_vars/all.yml"
    text = gv.read_text()
    # block in group all, no group named: a host with no cable and in no instance is no Spark
    plan = load_plan(str(d / "hosts.ini"))
    assert "prom1" not in [h.name for h in plan.hosts] and plan.left_out == ("prom1",)
    gv.write_text(text.replace("sparkfab:\n", "sparkfab:\n  group: sparks\n", 1))
    plan = load_plan(str(d / "hosts.ini"))
    assert "prom1" not in [h.name for h in plan.hosts] and plan.left_out == ("prom1",)
    gv.write_text(text.replace("sparkfab:\n", "sparkfab:\n  group: spraks\n", 1))
    with pytest.raises(InventoryError) as exc:
        load_plan(str(d / "hosts.ini"))
    assert "no group 'spraks' with hosts" in exc.value.render() and "monitoring, sparks" in exc.value.render()
    # all is every host: said as such, with the groups there are and the way without a group
    gv.write_text(text.replace("sparkfab:\n", "sparkfab:\n  group: all\n", 1))
    with pytest.raises(InventoryError) as exc:
        load_plan(str(d / "hosts.ini"))
    said = exc.value.render()
    assert "names 'all', Ansible's implicit group of every host" in said and "(monitoring, sparks)" in said


def test_a_plain_file_naming_a_group_is_told_it_has_none(tmp_path):
    (tmp_path / "inv.yml").write_text(
        RING4.read_text().replace("    sparkfab:\n", "    sparkfab:\n      group: sparks\n", 1)
    )
    with pytest.raises(InventoryError) as exc:
        load_plan(str(tmp_path / "inv.yml"))
    assert "all.vars.sparkfab.group: names a group, and this inventory has none" in exc.value.render()


def test_a_host_variable_is_reported_where_it_was_written(tmp_path, monkeypatch):
    """A value from host_vars/ or from the INI line of its host is named with that file and line
    (as Ansible's own data tags say), not with the file of the sparkfab block."""
    d = _copy(tmp_path, "ring4-ini")
    (d / "host_vars/spark-355d.yml").write_text("# rack B\nrank: first\n")
    ini = d / "hosts.ini"
    ini.write_text(
        ini.read_text().replace("spark-c049 ansible_host=10.0.0.13", "spark-c049 ansible_host=10.0.0.13 mgmt_if=7")
    )
    line = ini.read_text().splitlines().index("spark-c049 ansible_host=10.0.0.13 mgmt_if=7") + 1
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InventoryError) as exc:
        load_plan("ring4-ini/hosts.ini")
    said = exc.value.render()
    assert "ring4-ini/host_vars/spark-355d.yml:2: all.hosts.spark-355d.rank: " in said, said
    assert f"ring4-ini/hosts.ini:{line}: all.hosts.spark-c049.mgmt_if: " in said, said


def test_a_host_name_is_reported_where_it_was_written(tmp_path, monkeypatch):
    """A bad host name (a NUL byte on the INI's line) is named with the INI file and that line,
    where the name was written, not with the file of the sparkfab block."""
    d = _copy(tmp_path, "ring4-ini")
    ini = d / "hosts.ini"
    ini.write_bytes(ini.read_bytes().replace(b"[sparks:vars]", b"x\x00y\n\n[sparks:vars]"))
    line = ini.read_bytes().splitlines().index(b"x\x00y") + 1
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InventoryError) as exc:
        load_plan("ring4-ini/hosts.ini")
    said = exc.value.render()
    assert f"ring4-ini/hosts.ini:{line}: all.hosts.x\x00y: " in said, said
