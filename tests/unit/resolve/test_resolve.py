"""Rank order in cable order, rings of any size, stable allocation."""

from __future__ import annotations

import copy

import pytest
from ruamel.yaml import YAML

from sparkfab.errors import InventoryError
from sparkfab.inventory import parse_partial
from sparkfab.resolve import resolve
from tests.helpers.inventories import MIXED4, MIXED6, plan_of, ring


@pytest.mark.parametrize("n,orient", [(4, MIXED4), (6, MIXED6), (5, [("p0", "p1")] * 5)])
def test_ring_ranks_follow_the_cables(n, orient):
    plan = plan_of(ring(n, orient))
    inst = plan.instances[0]
    assert inst.topology == "ring"
    assert list(inst.hosts) == [f"s{i}" for i in range(n)]
    for r in inst.ranks:
        h = plan.host(r.host)
        nxt = next(i for i in h.ifaces if i.port == r.next_port and i.root == 0)
        prv = next(i for i in h.ifaces if i.port == r.prev_port and i.root == 0)
        assert nxt.peer_host == r.next_host == f"s{(r.rank + 1) % n}"
        assert prv.peer_host == r.prev_host == f"s{(r.rank - 1) % n}"


def test_ring_head_is_configurable_and_direction_follows_first_cable():
    plan = plan_of(ring(6, MIXED6, head="s3"))
    # s3's first-listed cable is cables[2] (to s2), so the ring runs backwards from s3
    assert list(plan.instances[0].hosts) == ["s3", "s2", "s1", "s0", "s5", "s4"]


def test_rank_one_sets_the_direction():
    data = ring(4, MIXED4)
    data["all"]["hosts"]["s3"]["rank"] = 1
    assert list(plan_of(data).instances[0].hosts) == ["s0", "s3", "s2", "s1"]


def test_triangle():
    data = ring(3, [("p0", "p1")] * 3)
    inst = plan_of(data).instances[0]
    assert inst.topology == "triangle" and list(inst.hosts) == ["s0", "s1", "s2"]


def test_pair_with_two_cables_uses_four_rails():
    data = {
        "all": {
            "hosts": {"a": {}, "b": {}},
            "vars": {
                "sparkfab": {
                    "cluster": "p",
                    "cables": [["a:p0", "b:p0"], ["a:p1", "b:p1"]],
                    "instances": {"x": {"hosts": ["a", "b"], "tp": 2}},
                }
            },
        }
    }
    plan = plan_of(data)
    assert plan.instances[0].topology == "pair"
    assert len(plan.rails) == 4
    assert plan.host("a").hca["200"] == ("rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1")
    assert plan.host("a").hca["100e"] == ("rocep1s0f0", "rocep1s0f1")


def switched(n, order=None):
    hosts = {f"s{i:02d}": {} for i in range(n)}
    cables = [[f"s{i:02d}:p1", f"sw:{i // 2 + 1}/{i % 2 + 1}"] for i in range(n)]
    return {
        "all": {
            "hosts": hosts,
            "vars": {
                "sparkfab": {
                    "cluster": "s",
                    "switches": {"sw": {"model": "CRS804"}},
                    "cables": cables,
                    "instances": {"x": {"hosts": order or list(hosts), "tp": n}},
                }
            },
        }
    }


def test_switched_ranks_and_hca():
    plan = plan_of(switched(8, order=[f"s{i:02d}" for i in (3, 1, 2, 0, 4, 5, 6, 7)]))
    inst = plan.instances[0]
    assert inst.topology == "switched" and inst.hosts[0] == "s03"
    h = plan.host("s00")
    assert h.hca["200"] == ("rocep1s0f1", "roceP2p1s0f1")
    assert h.hca["100e"] == ("rocep1s0f1",)
    assert {i.subnet for i in h.ifaces} == {r.subnet for r in plan.rails}
    assert len(plan.rails) == 2


def _addresses(plan):
    return {(h.name, i.netdev): i.address for h in plan.hosts for i in h.ifaces}


def test_adding_a_spark_to_a_switch_keeps_addresses():
    before = plan_of(switched(6))
    grown = switched(6)
    sf = grown["all"]["vars"]["sparkfab"]
    grown["all"]["hosts"] = {"s-new": {}, **grown["all"]["hosts"]}  # inserted first, not appended
    sf["cables"].insert(0, ["s-new:p1", "sw:4/1"])
    after = plan_of(grown)
    old = _addresses(before)
    assert {k: v for k, v in _addresses(after).items() if k in old} == old


def test_adding_a_cable_elsewhere_keeps_addresses():
    data = ring(4, MIXED4, extra_hosts=2)
    before = plan_of(copy.deepcopy(data))
    data["all"]["vars"]["sparkfab"]["cables"].append(["s4:p0", "s5:p0"])
    after = plan_of(data)
    old = _addresses(before)
    assert {k: v for k, v in _addresses(after).items() if k in old} == old
    assert ("s4", "enp1s0f0np0") in _addresses(after)


def test_problems_come_together():
    data = ring(4, MIXED4)
    sf = data["all"]["vars"]["sparkfab"]
    sf["cables"].append(["s0:p5", "s9:p0"])
    sf["mtu"] = 99999
    inv, problems = parse_partial(data, "t")
    with pytest.raises(InventoryError) as exc:
        resolve(inv, data, problems)
    text = exc.value.render()
    assert "MTU 99999 is outside 1280-9216" in text and "s0:p5 — a Spark has ports p0 and p1" in text


def test_ruamel_tree_gives_line_numbers(tmp_path):
    from sparkfab.resolve import load_plan

    f = tmp_path / "inv.yml"
    f.write_text(
        "all:\n  hosts:\n    a: {}\n  vars:\n    sparkfab:\n      cluster: x\n      cables:\n        - [a:p0, b:p0]\n"
    )
    with pytest.raises(InventoryError) as exc:
        load_plan(str(f))
    assert exc.value.problems[0].line == 8
    YAML()  # the round-trip loader is what carries the positions
