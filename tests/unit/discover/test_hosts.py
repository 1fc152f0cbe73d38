"""discover on the Sparks themselves, as shipped (no lldpd): every port brought up, frames sent and
heard by the relay, a silent port reported after its patience (a protocol double of a Spark's shell)."""

from __future__ import annotations

from sparkfab.discover.hosts import discover


class _Spark:
    """A protocol double of a Spark's shell for discover, as shipped: no lldpd (lldpcli exits
    127), and the relay (`python3 -c RELAY CONFIG`) hears what its peer's relay sends, from its
    peer's `speaks_after` seconds on (a peer that never speaks: a silent port)."""

    NETDEVS = ("enp1s0f1np1", "enP2p1s0f1np1")

    def __init__(self, name: str, speaks_after: float = 0.0) -> None:
        import threading

        self.name, self.speaks_after, self.peer = name, speaks_after, None
        self.sent: dict[str, str] = {}
        self.sending = threading.Event()

    def mac(self, netdev: str) -> str:
        return f"02:00:00:00:{ord(self.name[0]):02x}:{self.NETDEVS.index(netdev):02x}"

    def run(self, cmd: str, *args: str):
        from types import SimpleNamespace

        if cmd.startswith("lldpcli") or "lldpcli" in cmd:
            return SimpleNamespace(rc=127, stdout="", stderr="lldpcli: command not found")
        out = "root\n0\n" if cmd.startswith("id ") else self._answer(cmd, args)
        return SimpleNamespace(rc=0, stdout=out, stderr="")

    def check_output(self, cmd: str, *args: str) -> str:
        return self.run(cmd, *args).stdout

    def _answer(self, cmd: str, args: tuple[str, ...]) -> str:
        import json
        import time

        if cmd == "hostname":
            return f"{self.name}\n"
        if cmd.startswith("python3 -c"):  # the relay: send ours, hear the peer's
            config = json.loads(args[1])
            self.sent = config["send"]
            self.sending.set()
            peer = self.peer
            if peer.speaks_after > config["seconds"] or not peer.sending.wait(2):
                return json.dumps({"silent": config["listen"], "dropped": {}}) + "\n"
            time.sleep(peer.speaks_after)
            src = bytes.fromhex(peer.mac(next(iter(peer.sent))).replace(":", ""))
            lines = [
                json.dumps({"netdev": n, "frame": (b"\x01\x80\xc2\x00\x00\x0e" + src + b"\x88\xcc").hex() + du})
                for n in config["listen"]
                for du in peer.sent.values()
            ]
            return "\n".join([*lines, json.dumps({"silent": [], "dropped": {}})]) + "\n"
        if cmd == "ip -j link show":
            return json.dumps(
                [{"ifname": n, "flags": ["BROADCAST", "UP", "LOWER_UP"], "address": self.mac(n)} for n in self.NETDEVS]
            )
        return ""


def _pair(speaks_after: float) -> list:
    a, b = _Spark("a"), _Spark("b", speaks_after)
    a.peer, b.peer = b, a
    return [("a", "addr-a", a), ("b", "addr-b", b)]


def test_discover_finds_a_cable_between_sparks_without_lldpd():
    r = discover(_pair(0.05), settle_s=0, patience_s=30)
    assert r.cables == [["a:p1", "b:p1"]] and r.odd == []


def test_discover_reports_a_port_that_stays_silent_after_its_patience():
    r = discover(_pair(10**6), settle_s=0, patience_s=0.2)
    assert "a:enp1s0f1np1 has no LLDP neighbour" in r.odd
    assert any("seen from one end only" in o for o in r.odd)


def test_what_a_netdev_hears_now_replaces_lldpds_stale_entry():
    """After a recabling lldpd still lists the old neighbour for its TTL: the relay's fresh frame
    wins where it heard one; lldpd's word stays where it heard nothing now."""
    import json

    from sparkfab.discover.hosts import HostView, listen
    from sparkfab.facts.neighbours import Neighbour
    from sparkfab.lldp import frame as lf

    fresh = lf.Frame(lf.CHASSIS_MAC, bytes(6), lf.PORT_IFNAME, b"enp1s0f0np0", 120, b"enp1s0f0np0", b"new")
    line = json.dumps({"netdev": "enp1s0f1np1", "frame": (bytes(12) + b"\x88\xcc" + lf.lldpdu(fresh)).hex()})

    class Host:
        def check_output(self, cmd: str, *args: str) -> str:
            return line + "\n" + json.dumps({"silent": [], "dropped": {}}) + "\n"

    stale = Neighbour("old", "enp1s0f0np0", "aa")
    switch = Neighbour("sw1", "swp1s0", "bb")
    view = HostView("a", "addr", hostname="a", fabric=["enp1s0f1np1", "enP2p1s0f1np1"],
                    ports={"enp1s0f1np1": [stale], "enP2p1s0f1np1": [switch]})  # fmt: skip
    listen(Host(), view, 1.0)
    assert [n.system for n in view.ports["enp1s0f1np1"]] == ["new"]
    assert view.ports["enP2p1s0f1np1"] == [switch]
