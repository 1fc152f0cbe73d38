"""The plan's addresses in a launch are judged as stand-ins: two inventories that differ only in
their Sparks' addresses send the engine the same argvs (so the second finds every verdict kept),
and what the engine says of a stand-in is said with the address it stands for."""

from __future__ import annotations

import pytest
import yaml

from sparkfab import oracle
from sparkfab.oracle import standins
from sparkfab.resolve import load_plan
from tests.conftest import REPO


def _moved(tmp_path, name: str, old: str, new: str):
    """An example inventory with every address under one prefix moved to another."""
    text = (REPO / "inventory" / f"{name}.yml").read_text().replace(old, new)
    path = tmp_path / f"{name}-moved.yml"
    path.write_text(text)
    return load_plan(str(path))


def _argvs(plan):
    return [(item.rank, item.argv) for items in oracle._launches(plan).values() for item in items]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [("ring4", "192.168.", "172.20."), ("pair-sglang", "192.168.", "10.77."), ("pair-sglang", "10.0.0.", "10.9.9.")],
)
def test_inventories_that_differ_only_in_addresses_are_judged_as_one(tmp_path, name, old, new):
    plan = load_plan(str(REPO / "inventory" / f"{name}.yml"))
    moved = _moved(tmp_path, name, old, new)
    assert _argvs(plan) == _argvs(moved)
    # the engine is given a stand-in; each launch, as it runs, still names the plan's own address
    from sparkfab.render.launch import launch

    addresses = standins.plan_addresses(plan)
    judged = " ".join(a for _rank, argv in _argvs(plan) for a in argv)
    assert "198.18.0.1" in judged and not any(addr in judged for addr in addresses)
    inst = plan.instances[0]
    real = launch(plan, inst, plan.host(inst.ranks[0].host), inst.recipe).argv
    assert any(addr in a for a in real for addr in addresses)


def test_the_forms_an_address_takes_in_an_argv():
    known = frozenset({"10.1.2.3", "10.1.2.30", "fd00::1"})
    argv, back = standins.stand_in(
        ["--master-addr", "10.1.2.3", "--dist-init-addr", "10.1.2.30:29501", "--peer", "[fd00::1]:80",
         "--ip6", "fd00::1", "--again", "10.1.2.3", "--host", "0.0.0.0", "--name", "10.1.2.3x",
         "--served-model-name", "fd00::1:5"],
        known,
    )  # fmt: skip
    assert argv == (
        "--master-addr", "198.18.0.1", "--dist-init-addr", "198.18.0.2:29501", "--peer", "[2001:db8::3]:80",
        "--ip6", "2001:db8::3", "--again", "198.18.0.1", "--host", "0.0.0.0", "--name", "10.1.2.3x",
        "--served-model-name", "fd00::1:5",
    )  # fmt: skip
    assert back == {"198.18.0.1": "10.1.2.3", "198.18.0.2": "10.1.2.30", "2001:db8::3": "fd00::1"}


def test_what_the_engine_says_of_a_stand_in_names_the_address():
    back = {"198.18.0.1": "10.1.2.3", "198.18.0.12": "10.1.2.40", "2001:db8::3": "fd00::1"}
    said = "cannot reach 198.18.0.1:29501 nor 198.18.0.12, nor [2001:db8::3]:80; 198.18.0.123, 198.18.0.1.5 not ours"
    assert standins.said_with_addresses(said, back) == (
        "cannot reach 10.1.2.3:29501 nor 10.1.2.40, nor [fd00::1]:80; 198.18.0.123, 198.18.0.1.5 not ours"
    )
    assert standins.said_with_addresses(said, {}) == said


def test_only_ip_addresses_of_the_plan_are_stood_in_for(tmp_path):
    """A Spark reached by name keeps its name in the argv: a name could equal another flag's
    value (a host called fp8 beside --kv-cache-dtype fp8), which must reach the engine as it is."""
    data = yaml.safe_load((REPO / "inventory/pair-sglang.yml").read_text())
    data["all"]["hosts"]["spark-a"]["ansible_host"] = "fp8"
    path = tmp_path / "named.yml"
    path.write_text(yaml.safe_dump(data))
    plan = load_plan(str(path))
    assert "fp8" not in standins.plan_addresses(plan) and "10.0.0.22" in standins.plan_addresses(plan)
