"""The inventory model, validation messages, resolution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REGEN, REPO

BAD = sorted((REPO / "tests/data/bad").glob("*.yml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_validates_and_plans(cli, path):
    assert cli("validate", str(path.relative_to(REPO))).code == 0
    res = cli("plan", str(path.relative_to(REPO)), "--format", "json")
    assert res.code == 0
    plan = json.loads(res.out)
    assert plan["hosts"] and all(h["ifaces"] for h in plan["hosts"])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_references_the_schema(path):
    assert path.read_text().startswith("# yaml-language-server: $schema=./schema.json")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_is_an_ansible_inventory(path):
    exe = shutil.which("ansible-inventory", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    assert exe, "ansible-inventory is installed with sparkfab (ansible-core)"
    out = subprocess.run([exe, "-i", str(path), "--list"], check=True, capture_output=True, text=True).stdout
    hosts = json.loads(out)["_meta"]["hostvars"]
    assert hosts and all("sparkfab" in v for v in hosts.values())


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_inventory_message(cli, path):
    """Every user-facing validation message, pinned exactly (regenerate: SPARKFAB_REGEN=1)."""
    res = cli("validate", str(path.relative_to(REPO)))
    expected = path.with_suffix(".expected")
    if REGEN:
        expected.write_text(res.err)
    assert res.code == 2
    assert "Traceback" not in res.err
    assert res.err == expected.read_text()


def test_ring4_plan_reproduces_the_cable_table(cli):
    """The 001 write-up: cable, cages and the two subnets per cable."""
    plan = json.loads(cli("plan", "inventory/ring4.yml", "--format", "json").out)
    table = {
        ("spark-329f", "p1", "spark-355d", "p1"): ("192.168.100.0/24", "192.168.102.0/24"),
        ("spark-355d", "p0", "spark-c049", "p0"): ("192.168.104.0/24", "192.168.105.0/24"),
        ("spark-c049", "p1", "spark-3d38", "p0"): ("192.168.106.0/24", "192.168.107.0/24"),
        ("spark-3d38", "p1", "spark-329f", "p0"): ("192.168.101.0/24", "192.168.103.0/24"),
    }
    seen = {}
    for h in plan["hosts"]:
        for i in h["ifaces"]:
            key = (h["name"], i["port"], i["peer_host"], i["peer_port"])
            if key in table:
                seen.setdefault(key, {})[i["root"]] = i["subnet"]
    assert {k: (v[0], v[1]) for k, v in seen.items()} == table
    inst = plan["instances"][0]
    assert [r["host"] for r in inst["ranks"]] == ["spark-329f", "spark-355d", "spark-c049", "spark-3d38"]
    assert inst["topology"] == "ring"


def test_twins_always_on_different_subnets():
    from sparkfab.resolve import load_plan

    for path in EXAMPLES:
        plan = load_plan(str(path))
        for h in plan.hosts:
            by_port: dict[str, set[str]] = {}
            for i in h.ifaces:
                by_port.setdefault(i.port, set()).add(i.subnet)
            assert all(len(s) == 2 for s in by_port.values()), (path.name, h.name)


def test_the_package_gives_its_names_when_asked_and_the_ansible_child_imports_no_models():
    """`sparkfab.inventory` imports its modules when a name is first asked for: every name it
    gives resolves, and the child that reads with Ansible (started for every such read) never
    loads the models or pydantic."""
    import subprocess
    import sys

    import sparkfab.inventory as package

    assert sorted(package.__all__) == sorted(package._FROM)
    assert all(getattr(package, name) is not None for name in package.__all__)
    probe = (
        "import sys, sparkfab.inventory.ansible_child; "
        "print(sorted(m for m in sys.modules if 'pydantic' in m or m.endswith('.model')))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout
