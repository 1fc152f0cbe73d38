"""verify's cabling check (`verify.lldp`): what each Spark port heard over LLDP against the plan, on
captured lldpcli listings: swaps, dead ports, twins on one wire, switch ports as each OS names them."""

from __future__ import annotations

import pytest

from sparkfab.facts.neighbours import Neighbour, local_chassis, neighbours
from sparkfab.resolve import load_plan
from sparkfab.verify import lldp
from sparkfab.verify.result import FAIL, PASS
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


def _n(system, port, chassis=""):
    return Neighbour(system, port, chassis)


def test_lldp_check_against_plan_names_swaps_and_dead_ports():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = plan.host("spark-329f")
    seen = neighbours((CAPTURED / "lldpcli-ring-spark329f.json").read_text())
    assert all(r.status == PASS for r in lldp.check_host(plan, host, seen))
    swapped = dict(seen)
    swapped["enp1s0f1np1"] = [_n("spark-c049", "enp1s0f0np0")]
    del swapped["enP2p1s0f0np0"]
    results = {r.subject: r for r in lldp.check_host(plan, host, swapped)}
    bad = results["enp1s0f1np1 (p1)"]
    assert (bad.status, bad.expected, bad.actual) == (FAIL, "spark-355d:enp1s0f1np1", "spark-c049:enp1s0f0np0")
    dead = results["enP2p1s0f0np0 (p0)"]
    assert dead.status == FAIL and dead.detail.startswith("missing")


def test_twins_on_one_wire_give_one_verdict_for_every_arrival_order():
    """A twin hears its own twin and both far twins (one wire per port): whichever lldpd lists
    last, the cable passes; its own twin alone is no cable; a swapped far end fails in every order."""
    import itertools

    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    host = plan.host("spark-a")
    own = {"spark-a", "aa:aa"}
    heard = [
        _n("spark-b", "enp1s0f1np1", "bb:bb"),
        _n("spark-b", "enP2p1s0f1np1", "bb:bb"),
        _n("spark-a", "enP2p1s0f1np1", "aa:aa"),
    ]
    for order in itertools.permutations(heard):
        seen = {"enp1s0f1np1": list(order), "enP2p1s0f1np1": list(order)}
        assert {r.status for r in lldp.check_host(plan, host, seen, own)} == {PASS}
    alone = {"enp1s0f1np1": [heard[2]], "enP2p1s0f1np1": [_n("spark-a", "enp1s0f1np1", "aa:aa")]}
    assert {r.detail[:7] for r in lldp.check_host(plan, host, alone, own)} == {"missing"}
    other = [_n("spark-c", "enp1s0f0np0", "cc:cc"), heard[2]]
    for order in itertools.permutations(other):
        rows = lldp.check_host(plan, host, {"enp1s0f1np1": list(order)}, own)
        assert rows[0].status == FAIL and rows[0].actual == "spark-c:enp1s0f0np0"


@pytest.mark.parametrize(
    "inventory,host,port_id",
    [
        ("switch8-crs804-200.yml", "spark-01", "qsfp56-dd-1-1"),
        ("switch8-crs804-200.yml", "spark-04", "qsfp56-dd-2-5"),  # sw1:2/2, the second 200G leg
        ("switch8-crs812-100.yml", "spark-03", "qsfp56-dd-1-5"),  # sw1:1/3, the third 100G leg
        ("switch8-crs812-100.yml", "spark-08", "qsfp56-dd-2-7"),
    ],
)
def test_lldp_switch_ports_as_routeros_names_them(inventory, host, port_id):
    plan = load_plan(str(REPO / "inventory" / inventory))
    h = plan.host(host)
    own = {host, "aa:aa"}
    twin = {i.netdev: _n(host, other.netdev, "aa:aa") for i, other in zip(h.ifaces, reversed(h.ifaces), strict=True)}
    name = plan.switch("sw1").lldp_name  # the CRS804 example's keeps RouterOS's identity
    seen = {i.netdev: [twin[i.netdev], _n(name, port_id, "cc:cc")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, seen, own)} == {PASS}
    lane = {i.netdev: [_n(name, port_id[:-1] + "9", "cc:cc")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, lane, own)} == {FAIL}


def test_a_switch_whose_identity_is_not_its_key_is_named_with_the_fix():
    plan = load_plan(str(REPO / "inventory/switch8-crs812-100.yml"))
    h = plan.host("spark-03")
    seen = {i.netdev: [_n("MikroTik", "qsfp56-dd-1-5")] for i in h.ifaces}
    rows = lldp.check_host(plan, h, seen)
    assert {r.status for r in rows} == {FAIL}
    assert (
        "announces itself as 'MikroTik' (MikroTik's name as shipped), not 'sw1': set `lldp_name: MikroTik` on switch sw1"
        in rows[0].detail
    )


def test_a_twin_on_one_wire_as_lldpd_lists_it():
    """Real lldpd output of a lab pair whose twins share a wire: three neighbours per twin, the
    host's own chassis among them; every port passes, whichever lldpd listed last."""
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    seen = neighbours((CAPTURED / "lldpcli-one-wire-pair-spark-a.json").read_text())
    own = local_chassis((CAPTURED / "lldpcli-chassis-spark-a.json").read_text())
    assert {k: len(v) for k, v in seen.items()} == {"enp1s0f1np1": 3, "enP2p1s0f1np1": 3}
    assert {n.system for v in seen.values() for n in v} == {"spark-a", "spark-b"} and "spark-a" in own
    rows = lldp.check_host(plan, plan.host("spark-a"), seen, own)
    assert {r.status for r in rows} == {PASS}
    reversed_order = {k: v[::-1] for k, v in seen.items()}
    assert {r.status for r in lldp.check_host(plan, plan.host("spark-a"), reversed_order, own)} == {PASS}


def test_a_generic_switch_of_unknown_naming_is_matched_by_port_and_leg():
    """A generic switch whose OS sparkfab has no profile for names its ports its own way
    (Ethernet1/2): the last two numbers are its port and leg; another leg fails."""
    from tests.helpers.inventories import plan_of

    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(2)}
    sf = {
        "cluster": "g",
        "switches": {"sw": {"model": "generic", "ports": 8, "speed": 400}},
        "cables": [["s0:p1", "sw:1/1"], ["s1:p1", "sw:1/2"]],
    }
    plan = plan_of({"all": {"hosts": hosts, "vars": {"sparkfab": sf}}})
    h = plan.host("s1")
    ok = {i.netdev: [_n("sw", "Ethernet1/2")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, ok)} == {PASS}
    wrong = {i.netdev: [_n("sw", "Ethernet1/1")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, wrong)} == {FAIL}
