"""Deriving cables from what each port sees (no hosts needed)."""

from __future__ import annotations

import itertools

import pytest

from sparkfab.discover.cables import HostView, derive
from sparkfab.discover.inventory import merge, problems
from sparkfab.facts.neighbours import Neighbour, local_chassis, neighbours
from sparkfab.facts.netdevs import links as link_listing
from sparkfab.switches import catalog
from sparkfab.switches.profiles import known_switch


def view(label: str, ports: dict[str, tuple[str, str]], fabric: list[str] | None = None) -> HostView:
    return HostView(
        label,
        f"addr-{label}",
        hostname=label,
        chassis={label},
        ports={k: [Neighbour(*v)] for k, v in ports.items()},
        fabric=fabric if fabric is not None else sorted(ports),
    )


TWINS = ("enp1s0f1np1", "enP2p1s0f1np1")


def on_wire(label: str, far: list[Neighbour], order: tuple[int, ...] = (0, 1, 2)) -> HostView:
    """A Spark's p1 twins on one wire: each hears its own twin and every far netdev, in `order`."""
    ports = {}
    for mine, twin in (TWINS, TWINS[::-1]):
        heard = [Neighbour(label, twin, f"mac-{label}"), *far]
        ports[mine] = [heard[i] for i in order if i < len(heard)] + heard[len(order) :]
    return HostView(
        label, f"addr-{label}", hostname=label, chassis={label, f"mac-{label}"}, ports=ports, fabric=list(TWINS)
    )


def test_pair_twins_agree_and_the_cable_is_seen_from_both_ends():
    a = view("a", {"enp1s0f1np1": ("b", "enp1s0f1np1"), "enP2p1s0f1np1": ("b", "enP2p1s0f1np1")})
    b = view("b", {"enp1s0f1np1": ("a", "enp1s0f1np1"), "enP2p1s0f1np1": ("a", "enP2p1s0f1np1")})
    r = derive({"a": a, "b": b}, ["a", "b"])
    assert r.cables == [["a:p1", "b:p1"]] and r.odd == []


def test_odd_things_are_reported():
    a = view(
        "a",
        {
            "enp1s0f1np1": ("b", "enp1s0f1np1"),
            "enP2p1s0f1np1": ("c", "enP2p1s0f0np0"),
            "enp1s0f0np0": ("stranger", "eth7"),
        },
        fabric=["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"],
    )
    b = view("b", {})
    r = derive({"a": a, "b": b}, ["a", "b"])
    text = "\n".join(r.odd)
    assert "a:enP2p1s0f0np0 has no LLDP neighbour" in text
    assert "a:p1: its twins disagree: root 0 sees b:p1, root 1 sees c:p0" in text
    assert "cable a:p1 - b:p1 is seen from one end only" in text
    # a port id that no switch profile places is reported, never written as a switch port
    assert "a:p0 sees stranger (port id eth7), which is neither a Spark of the list nor a switch port" in text
    assert not any("stranger" in end for c in r.cables for end in c)


def test_a_port_id_that_names_nothing_is_reported_not_cabled():
    a = view("a", {"enp1s0f1np1": ("b", "mystery"), "enP2p1s0f1np1": ("b", "mystery")})
    b = view("b", {}, fabric=[])
    r = derive({"a": a, "b": b}, ["a", "b"])
    assert r.cables == [] and r.odd == ["a:p1 sees b (port id mystery), which is not in the list of Sparks"]


def test_switch_ports_and_merge_keeps_comments():
    a = view("s1", {"enp1s0f1np1": ("sw1", "p2s1"), "enP2p1s0f1np1": ("sw1", "p2s1")})
    r = derive({"s1": a}, ["s1"])
    assert r.cables == [["s1:p1", "sw1:2/1"]]
    text = (
        "# keep me\nall:\n  hosts:\n    s1: {}\n  vars:\n    sparkfab:\n      cluster: x  # and me\n      cables: []\n"
    )
    out = merge(text, r, "x")
    assert "# keep me" in out and "# and me" in out and "- [s1:p1, sw1:2/1]" in out


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_a_pair_on_one_wire_is_one_cable_in_every_arrival_order(order):
    a = on_wire("a", [Neighbour("b", t, "mac-b") for t in TWINS], order)
    b = on_wire("b", [Neighbour("a", t, "mac-a") for t in TWINS], order)
    r = derive({"a": a, "b": b}, ["a", "b"])
    assert r.cables == [["a:p1", "b:p1"]] and r.odd == []


@pytest.mark.parametrize(
    "model,mode,port_ids,cables",
    [
        ("CRS804", "200", ["qsfp56-dd-1-1", "qsfp56-dd-1-5", "qsfp56-dd-4-5"], ["1/1", "1/2", "4/2"]),
        ("CRS812", "100", ["qsfp56-dd-1-1", "qsfp56-dd-1-3", "qsfp56-dd-2-7"], ["1/1", "1/2", "2/4"]),
        ("CRS812", "200", ["qsfp56-dd-2-5", "qsfp56-1-1", "qsfp56-2-1"], ["2/2", "3/1", "4/1"]),
    ],
)
def test_routeros_port_names_become_the_inventory_s_ports(model, mode, port_ids, cables):
    """A MikroTik announces its identity and first-lane port names; discover writes the cables
    the inventory names, and the inventory it writes is one validate accepts."""
    views = {f"s{i}": on_wire(f"s{i}", [Neighbour("MikroTik", pid, "mac-sw")]) for i, pid in enumerate(port_ids)}
    known = {"MikroTik": known_switch("sw1", catalog.MODELS[model], "routeros", mode)}
    r = derive(views, list(views), known, mode)
    assert r.odd == [] and r.cables == [[f"s{i}:p1", f"sw1:{c}"] for i, c in enumerate(cables)]
    # and without an inventory: the switch is named as it announces itself, its model guessed
    fresh = derive(views, list(views), None, mode)
    assert fresh.odd == [] and [c[1] for c in fresh.cables] == [f"MikroTik:{c}" for c in cables]
    if model == "CRS812" or mode == "200":
        assert problems(merge(None, fresh, "x")) == []


def test_a_port_no_profile_places_is_odd_and_never_a_cable():
    views = {"s0": on_wire("s0", [Neighbour("core", "Gi0/0/1", "mac-sw")])}
    r = derive(views, ["s0"])
    assert r.cables == [] and "which is neither a Spark of the list nor a switch port" in r.odd[0]
    legs = {"s0": on_wire("s0", [Neighbour("MikroTik", "qsfp56-dd-1-3", "mac-sw")])}  # a 100G leg at 200
    assert derive(legs, ["s0"]).cables == [] and derive(legs, ["s0"]).odd


def test_cumulus_breakout_names():
    views = {f"s{i}": on_wire(f"s{i}", [Neighbour("leaf1", p, "mac-sw")]) for i, p in enumerate(["swp1s0", "swp1s1"])}
    r = derive(views, list(views))
    assert r.odd == [] and [c[1] for c in r.cables] == ["leaf1:1/1", "leaf1:1/2"]
    assert "os: cumulus" in merge(None, r, "x") and problems(merge(None, r, "x")) == []


def test_a_spark_never_cables_to_itself():
    """Its own twin's announcements are no cable (the review's `[spark-a:p1, spark-a:p1]`)."""
    for order in itertools.permutations(range(3)):
        a = on_wire("a", [Neighbour("b", t, "mac-b") for t in TWINS], order)
        r = derive({"a": a}, ["a"])
        assert all(c[0].split(":")[0] != c[1].split(":")[0] for c in r.cables)


def test_sparks_as_shipped_announce_macs_and_are_still_cabled():
    """lldpd's port id is the netdev's MAC until sparkfab's `portidsubtype ifname` is installed
    (lldpcli(8)): discover names it by the MAC the far Spark's own link listing gives."""
    macs = {"a": {"enp1s0f1np1": "3c:6d:66:aa:00:01", "enP2p1s0f1np1": "3c:6d:66:aa:00:02"}}
    macs["b"] = {"enp1s0f1np1": "3c:6d:66:bb:00:01", "enP2p1s0f1np1": "3c:6d:66:bb:00:02"}
    views = {}
    for me, far in (("a", "b"), ("b", "a")):
        heard = [Neighbour(far, mac.upper(), f"mac-{far}") for mac in macs[far].values()]
        v = on_wire(me, heard)
        v.ports = {
            k: [Neighbour(me, macs[me][t], f"mac-{me}") if n.system == me else n for n in ns]
            for k, ns in v.ports.items()
            for t in [next(x for x in TWINS if x != k)]
        }
        v.macs = {mac: netdev for netdev, mac in macs[me].items()}
        views[me] = v
    r = derive(views, ["a", "b"])
    assert r.cables == [["a:p1", "b:p1"]] and r.odd == []


def test_real_lldpd_output_of_sparks_as_shipped_is_cabled():
    """lldpd as its package configures it (port ids are MACs, captured on a lab pair): the far
    Spark's own link listing names them, and the cable is found."""
    from tests.conftest import REPO

    captured = REPO / "tests/data/captured"
    a = HostView("spark-a", "addr-a", hostname="spark-a", fabric=list(TWINS))
    a.chassis = local_chassis((captured / "lldpcli-chassis-spark-a.json").read_text())
    a.ports = neighbours((captured / "lldpcli-shipped-pair-spark-a.json").read_text())
    links = link_listing((captured / "ip-link-shipped-pair-spark-b.json").read_text())
    b = HostView("spark-b", "addr-b", hostname="spark-b", chassis={"spark-b"}, fabric=list(TWINS))
    b.macs = {link.address: name for name, link in links.items() if name in TWINS}
    r = derive({"spark-a": a, "spark-b": b}, ["spark-a", "spark-b"])
    assert r.cables == [["spark-a:p1", "spark-b:p1"]]
    assert sorted(r.odd) == sorted(
        [f"spark-b:{t} has no LLDP neighbour" for t in TWINS]
        + ["cable spark-a:p1 - spark-b:p1 is seen from one end only"]
    )


def test_a_limited_discovery_names_far_sparks_it_did_not_ask_and_keeps_their_cables():
    """discover --limit: only spark c of a ring of three is asked. Its far ends a and b are named
    by what they announce (not contacted), its cables are not "seen from one end only", and the
    merge keeps the cable between a and b as written, c's cables where they were, a new one last."""
    c = view("c", {"enp1s0f1np1": ("a", "enp1s0f0np0"), "enP2p1s0f1np1": ("a", "enP2p1s0f0np0")})
    c.ports["enp1s0f0np0"] = [Neighbour("b", "enp1s0f1np1")]
    c.ports["enP2p1s0f0np0"] = [Neighbour("b", "enP2p1s0f1np1")]
    c.fabric = sorted(c.ports)
    r = derive({"c": c}, ["c"], beyond=frozenset({"a", "b"}))
    assert r.odd == [] and sorted(map(sorted, r.cables)) == [["a:p0", "c:p1"], ["b:p1", "c:p0"]]
    text = (
        "all:\n  hosts: {a: {}, b: {}, c: {}}\n  vars:\n    sparkfab:\n      cluster: x\n      cables:\n"
        "        - [a:p1, b:p0]  # a to b\n        - [b:p1, c:p1]\n        - [c:p0, a:p0]\n"
    )
    out = merge(text, r, "x", {"c"})
    cables = [line.strip() for line in out.splitlines() if line.strip().startswith("- [")]
    # b:p1-c:p1 is gone (c:p1 now goes to a), c:p0-a:p0 became c:p0-b:p1, a:p0-c:p1 is new
    assert cables[0].startswith("- [a:p1, b:p0] ") and cables[0].endswith("# a to b") and len(cables) == 3
    assert {frozenset(x.strip("- []").split(", ")) for x in cables[1:]} == {
        frozenset({"c:p0", "b:p1"}),
        frozenset({"a:p0", "c:p1"}),
    }
    # without the limit, the same view is two one-ended cables
    alone = derive({"c": c}, ["c"])
    assert len([o for o in alone.odd if "seen from one end only" in o]) == 2


def test_a_spark_left_out_by_a_limit_is_named_by_the_inventorys_cable_to_it():
    """Not asked, it announces its hostname as shipped (`spark-9f1e`), not its key: the netdev the
    inventory cables to it names it."""
    c = on_wire("c", [Neighbour("spark-9f1e", t, "mac-x") for t in TWINS])
    r = derive({"c": c}, ["c"], beyond=frozenset({"spark-b"}), planned={("c", t): "spark-b" for t in TWINS})
    assert r.cables == [["c:p1", "spark-b:p1"]] and not any("not in the list" in o for o in r.odd)
