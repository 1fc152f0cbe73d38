"""Deriving cables from what each port sees (no hosts needed)."""

from __future__ import annotations

from sparkfab.discover import HostView, derive, merge


def view(label: str, ports: dict[str, tuple[str, str]], fabric: list[str] | None = None) -> HostView:
    return HostView(
        label,
        f"addr-{label}",
        hostname=label,
        chassis={label},
        ports=ports,
        fabric=fabric if fabric is not None else sorted(ports),
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
    assert "a:p0 sees stranger" not in text  # a non-Spark port id is a switch port
    assert ["a:p0", "stranger:7"] in r.cables


def test_a_port_id_that_names_nothing_is_reported_not_cabled():
    a = view("a", {"enp1s0f1np1": ("b", "mystery"), "enP2p1s0f1np1": ("b", "mystery")})
    b = view("b", {}, fabric=[])
    r = derive({"a": a, "b": b}, ["a", "b"])
    assert r.cables == [] and r.odd == ["a:p1 sees b (port id mystery), which is not in the list of Sparks"]


def test_switch_ports_and_merge_keeps_comments():
    a = view("s1", {"enp1s0f1np1": ("sw1", "p2s1r0"), "enP2p1s0f1np1": ("sw1", "p2s1r1")})
    r = derive({"s1": a}, ["s1"])
    assert r.cables == [["s1:p1", "sw1:2/1"]]
    text = (
        "# keep me\nall:\n  hosts:\n    s1: {}\n  vars:\n    sparkfab:\n      cluster: x  # and me\n      cables: []\n"
    )
    out = merge(text, r, "x")
    assert "# keep me" in out and "# and me" in out and "- [s1:p1, sw1:2/1]" in out


class _Spark:
    """A protocol double of a Spark's shell for discover: lldpd on both PCIe twins of p1, whose
    announcements reach the peer only from the `late`-th `lldpcli update` on (a netdev made
    anew is picked up by lldpd a little later)."""

    NETDEVS = ("enp1s0f1np1", "enP2p1s0f1np1")

    def __init__(self, name: str, late: int = 1) -> None:
        self.name, self.late, self.updates, self.peer = name, late, 0, None

    def run(self, cmd: str):
        from types import SimpleNamespace

        if cmd == "lldpcli update":
            self.updates += 1
        return SimpleNamespace(rc=0, stdout="root\n0\n" if cmd.startswith("id ") else "", stderr="")

    def check_output(self, cmd: str) -> str:
        import json

        links = [{"ifname": n, "flags": ["BROADCAST", "UP", "LOWER_UP"]} for n in self.NETDEVS]
        if cmd.startswith("ip -j link show;"):
            heard = self.peer.updates >= self.peer.late
            ifaces = [
                {n: {"chassis": {self.peer.name: {}}, "port": {"id": {"value": n}}}} for n in self.NETDEVS if heard
            ]
            neigh = {"lldp": {"interface": ifaces}}
            chassis = {"local-chassis": {"chassis": {self.name: {"id": {"value": "00:11"}}}}}
            return f"{json.dumps(links)}@@{self.name}@@{json.dumps(chassis)}@@{json.dumps(neigh)}"
        return json.dumps(links)


def _pair(late_b: int) -> list:
    a, b = _Spark("a"), _Spark("b", late=late_b)
    a.peer, b.peer = b, a
    return [("a", "addr-a", a), ("b", "addr-b", b)]


def test_discover_listens_again_while_a_port_with_carrier_has_heard_nobody():
    from sparkfab.discover import discover

    r = discover(_pair(late_b=3), settle_s=0, patience_s=30, round_s=0.01)
    assert r.cables == [["a:p1", "b:p1"]] and r.odd == []


def test_discover_reports_a_port_that_stays_silent_after_its_patience():
    from sparkfab.discover import discover

    r = discover(_pair(late_b=10**6), settle_s=0, patience_s=0.2, round_s=0.01)
    assert "a:enp1s0f1np1 has no LLDP neighbour" in r.odd
    assert any("seen from one end only" in o for o in r.odd)
