"""Fault drills on a running lab: swap two cables, cut one, shape a link (tc tbf), restart a
Spark's Docker; and a Spark's cables made anew when it reboots.

A cable is named `cables[i]` (the whole wire) or `cables[i].r0` / `.r1` (the twins of one PCIe
root on it). A swap plugs the far ends of two cables into each other's ports: their netdevs
move to the other cable's bridge (`lab.spec`: a cable is one bridge), as a recabling moves the
plug. The current wiring (what was swapped or cut, and every netdev's shaped rate) is kept in
the lab's state (`LabState.wiring`) so that several drills can be stacked and a rebooted Spark
gets its cables back as they were.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import replace
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import UsageError
from sparkfab.lab.links import BOOT_MTU, make_veth, netns
from sparkfab.lab.rates import BURST_BYTES, rate_mbit, rate_text
from sparkfab.lab.spec import LabSpec, Node, Veth
from sparkfab.lab.state import LabState
from sparkfab.spark import LinkSpeed

_REF = re.compile(r"^cables\[([0-9]+)\](?:\.r([01]))?\Z")


def current(spec: LabSpec) -> list[Veth]:
    return LabState.read(spec.dir).cables()


def _save(spec: LabSpec, veths: list[Veth]) -> None:
    replace(LabState.read(spec.dir), wiring=tuple(veths)).write()


def _select(veths: list[Veth], ref: str) -> list[int]:
    """The netdevs a reference names: a whole cable (its switch port too), or one root's twins."""
    m = _REF.match(ref)
    if not m:
        raise UsageError(f"'{ref}' is not a cable: write cables[N] or cables[N].r0")
    cable, rail = int(m.group(1)), m.group(2)
    idx = [
        i
        for i, v in enumerate(veths)
        if v.cable == cable and (rail is None or (v.kind == "twin" and v.root == int(rail)))
    ]
    if not idx:
        raise UsageError(f"{ref}: no such cable in this lab")
    return idx


def _node(spec: LabSpec, v: Veth) -> Node:
    return next(n for n in spec.nodes if n.ns == v.a_ns)


def _announced(spec: LabSpec, v: Veth) -> tuple[str, str]:
    """(system name, port id) a netdev of a cable is heard as over LLDP: a Spark by its hostname
    and the netdev's name (after apply), a switch by what its frame on that port says."""
    from sparkfab.lldp import frame as lf

    node = _node(spec, v)
    sent = dict(f.split(" ", 1) for f in node.frames)
    if v.a_if in sent:
        return node.system or node.name, lf.decode(bytes.fromhex(sent[v.a_if])).port_text
    return node.hostname or node.system or node.name, v.a_if


def _forgotten(spec: LabSpec, veths: list[Veth], idxs: list[int], timeout_s: float = 5.0) -> None:
    """Wait (a plug is out for a moment) until the Sparks' lldpd on these netdevs has noticed the
    carrier go and forgotten what it heard there, as it does when a cable is pulled."""
    from sparkfab.facts.gather import Reply
    from sparkfab.facts.neighbours import NEIGHBOURS
    from sparkfab.lab import machine

    sparks = {m.node.ns: m for m in machine.machines(spec)}
    left = {(veths[i].a_ns, veths[i].a_if) for i in idxs if veths[i].a_ns in sparks}
    deadline = time.monotonic() + timeout_s
    while left and time.monotonic() < deadline:
        for ns in sorted({ns for ns, _ in left}):
            res = machine.run(sparks[ns], "sh", "-c", NEIGHBOURS.command())
            ports = NEIGHBOURS.parse(Reply(res.returncode, res.stdout, res.stderr)).ports
            if res.returncode != 0:
                return  # no lldpd there: nothing to forget
            left -= {(ns, netdev) for n, netdev in list(left) if n == ns and not ports.get(netdev)}
        if left:
            time.sleep(0.2)


def swap(spec: LabSpec, a: str, b: str) -> list[str]:
    """Plug the far ends of two whole cables into each other's ports: the netdevs at each
    cable's second end move to the other cable's wire."""
    if any((m := _REF.match(ref)) and m.group(2) for ref in (a, b)):
        raise UsageError("the twins of a port share one wire: swap whole cables (cables[N])")
    veths = current(spec)
    ia, ib = _select(veths, a), _select(veths, b)
    far_a = [i for i in ia if veths[i].end == 1]
    far_b = [i for i in ib if veths[i].end == 1]
    wire_a, wire_b = veths[ia[0]].bridge, veths[ib[0]].bridge
    with netns(veths[ia[0]].b_ns) as w:
        # unplugged: every netdev of both cables loses carrier (lldpd forgets what it heard
        # there), the plugs change places, plugged in again
        ports = {i: w.link_lookup(ifname=veths[i].b_if)[0] for i in (*ia, *ib)}
        for idx in ports.values():
            w.link("set", index=idx, state="down")
        _forgotten(spec, veths, [*ia, *ib])
        for moved, to in ((far_a, wire_b), (far_b, wire_a)):
            for i in moved:
                v = veths[i]
                w.link("set", index=ports[i], master=w.link_lookup(ifname=to)[0])
                veths[i] = replace(v, bridge=to, label=v.label + " (swapped)")
        for i, idx in ports.items():
            w.link("set", index=idx, state="down" if veths[i].cut else "up")
    _save(spec, veths)
    done = []
    for near, far in ((ia, far_b), (ib, far_a)):
        # the Sparks by the inventory's names; what they now meet as it announces itself
        here = sorted({f"{_node(spec, veths[i]).name}:{veths[i].a_if}" for i in near if veths[i].end == 0})
        there = sorted({":".join(_announced(spec, veths[i])) for i in far})
        done.append(f"{', '.join(here)} now meets {', '.join(there)}")
    silent = heard(spec, veths, {wire_a, wire_b} - {None})
    if silent:
        done.append(f"LLDP has not heard the new far end yet on {', '.join(silent)}")
    return done


def heard(spec: LabSpec, veths: list[Veth], wires: set[str | None], timeout_s: float = 40.0) -> list[str]:
    """Wait until every Spark netdev on these wires (cable bridges) hears the netdevs of other
    nodes on its wire and nothing else over LLDP, as a recabled port does once the new
    neighbour's announcement arrived (the Sparks are asked for one now; a switch announces on its
    own timer, every 30 s). Returns the netdevs still wrong after `timeout_s`."""
    from sparkfab.facts.neighbours import neighbours
    from sparkfab.lab import machine
    from sparkfab.verify import lldp

    sparks = {m.node.ns: m for m in machine.machines(spec)}
    want: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (namespace, netdev) -> what it should hear
    for v in veths:
        if v.bridge in wires and v.a_ns in sparks:
            others = [o for o in veths if o.bridge == v.bridge and o.a_ns != v.a_ns]
            want[(v.a_ns, v.a_if)] = {_announced(spec, o) for o in others}
    for ns in {ns for ns, _ in want}:
        machine.run(sparks[ns], "lldpcli", "update")
    deadline = time.monotonic() + timeout_s
    while want and time.monotonic() < deadline:
        for ns in sorted({ns for ns, _ in want}):
            res = machine.run(sparks[ns], "lldpcli", "-f", "json0", "show", "neighbors")
            seen = neighbours(res.stdout) if res.returncode == 0 else {}
            own = {sparks[ns].node.name, sparks[ns].node.hostname} - {""}
            for key in [k for k in want if k[0] == ns]:
                got = lldp.foreign(seen.get(key[1], []), own)
                # a Spark as shipped announces its netdev's MAC as port id and its name as the
                # port's description
                if got and all({(n.system, n.port), (n.system, n.descr)} & want[key] for n in got):
                    del want[key]
        if want:
            time.sleep(0.5)
    names = {n.ns: n.name for n in spec.nodes}
    return [f"{names[ns]}:{netdev}" for ns, netdev in sorted(want)]


def cut(spec: LabSpec, ref: str) -> list[str]:
    """Pull the cable at the far end: the Spark keeps its netdev but loses carrier."""
    veths = current(spec)
    done = []
    for i in _select(veths, ref):
        v = veths[i]
        with netns(v.b_ns) as b:
            b.link("set", index=b.link_lookup(ifname=v.b_if)[0], state="down")
        veths[i] = replace(v, label=v.label + " (cut)", cut=True)
        done.append(f"cut {v.a_ns}:{v.a_if} <-> {v.b_ns}:{v.b_if}")
    _save(spec, veths)
    return done


def rate(spec: LabSpec, ref: str, rate_text: str) -> list[str]:
    """Shape both directions of the twins on a cable with a token bucket (e.g. 1gbit)."""
    veths = current(spec)
    chosen = [veths[i] for i in _select(veths, ref) if veths[i].kind == "twin"]
    _shape(*((v, rate_text) for v in chosen))
    return [f"shaped {v.a_ns}:{v.a_if} <-> {v.b_ns}:{v.b_if} to {rate_text}" for v in chosen]


def renew(spec: LabSpec, host: str) -> None:
    """After a Spark's reboot: its network namespace anew (the kernel's state of the Spark is
    gone), its management port, and its ends of the cables moved over from the old namespace.

    Moving a netdev between namespaces drops what the kernel held for it (addresses, routes,
    per-interface sysctls, qdiscs, the MTU is set back below), as a reboot does to a NIC, while
    the neighbour's end stays the same netdev with its own settings: on hardware the far side
    of a cable only sees its carrier go and come back. An end that is gone is made anew."""
    from pyroute2 import netns as namespaces_of

    from sparkfab.lab import links

    node = spec.node(host)
    mine = [(v, end) for v in current(spec) for end in ("a", "b") if getattr(v, f"{end}_ns") == node.ns]
    shelf = f"{node.ns}-reboot"
    if shelf in namespaces_of.listnetns():
        namespaces_of.remove(shelf)
    links.namespace(shelf)
    try:
        kept = _move_ends(mine, node.ns, shelf) if node.ns in namespaces_of.listnetns() else set()
        if node.ns in namespaces_of.listnetns():
            namespaces_of.remove(node.ns)
        links.wait_gone_link(node.root_peer)
        links.namespace(node.ns)
        links.mgmt_link(spec, node)
        # the management port is a new veth with a new MAC: the lab host, the operator's side of
        # the site network, forgets the old one at once (a NIC keeps its address across a reboot)
        proc.run(["ip", "neigh", "flush", "to", node.mgmt_ip], check=False)
        _move_ends([(v, end) for v, end in mine if _end(v, end) in kept], shelf, node.ns)
    finally:
        namespaces_of.remove(shelf)
    for v, end in mine:
        if _end(v, end) in kept:
            _boot_state(v, end)
        else:
            _remove_far_end(v)
            make_veth(v)
    _shape(*((v, f"{v.rate_mbit}mbit") for v, _ in mine if v.rate_mbit))


def _end(v: Veth, end: str) -> tuple[str, str]:
    return getattr(v, f"{end}_ns"), getattr(v, f"{end}_if")


def _move_ends(ends: list[tuple[Veth, str]], src: str, dst: str) -> set[tuple[str, str]]:
    """Move these veth ends from namespace `src` to `dst`; the ends that were there."""
    moved = set()
    with netns(src) as ns:
        for v, end in ends:
            found = ns.link_lookup(ifname=_end(v, end)[1])
            if found:
                ns.link("set", index=found[0], net_ns_fd=dst)
                moved.add(_end(v, end))
    return moved


def _boot_state(v: Veth, end: str) -> None:
    """A Spark's port as it is after a boot: the driver's MTU, up (a cut cable's far end down)."""
    ns_name, ifname = _end(v, end)
    with netns(ns_name) as ns:
        idx = ns.link_lookup(ifname=ifname)[0]
        mtu = v.mtu if (end == "b" and v.bridge) else BOOT_MTU
        ns.link("set", index=idx, mtu=mtu, state="down" if (v.cut and end == "b") else "up")


def _remove_far_end(v: Veth) -> None:
    """A pair's other end goes with the namespace that is made anew; wait until it has."""
    import time

    deadline = time.monotonic() + 5
    for ns_name, ifname in ((v.a_ns, v.a_if), (v.b_ns, v.b_if)):
        while time.monotonic() < deadline:
            with netns(ns_name) as ns:
                if not ns.link_lookup(ifname=ifname):
                    break
            time.sleep(0.05)


def link_speed(spec: LabSpec, mode: LinkSpeed, hosts: set[str] | None = None) -> str:
    """Shape every Spark's fabric netdev (or those of `hosts`) to the lab's rate for a link-speed
    mode (`sparkfab.lab.rates`), both directions: what it sends and what its wire hands it."""
    names = {n.ns: n.name for n in spec.nodes}
    veths = current(spec)
    chosen = [i for i, v in enumerate(veths) if v.kind == "twin" and (hosts is None or names[v.a_ns] in hosts)]
    mbit = rate_mbit(mode, spec.scale)
    _shape(*((veths[i], f"{mbit}mbit") for i in chosen))
    for i in chosen:
        veths[i] = replace(veths[i], rate_mbit=mbit)
    _save(spec, veths)
    return link_speed_text(spec, mode, hosts)


def link_speed_text(spec: LabSpec, mode: LinkSpeed, hosts: set[str] | None = None) -> str:
    which = "every fabric veth" if hosts is None else f"the fabric veths of {', '.join(sorted(hosts))}"
    return f"lab {spec.cluster}: {which} shaped to {rate_text(mode, spec.scale)}"


def _shape(*shaped: tuple[Veth, str]) -> None:
    """Shape both ends of each veth to its rate (a tc rate such as `400mbit`): the netdev's
    egress and its wire's egress toward it; each namespace is entered once for all its ends (a
    pyroute2 handle on a namespace is a process)."""
    ends: dict[str, list[tuple[str, str]]] = {}
    for v, tc_rate in shaped:
        for ns_name, ifname in ((v.a_ns, v.a_if), (v.b_ns, v.b_if)):
            ends.setdefault(ns_name, []).append((ifname, tc_rate))
    for ns_name, todo in ends.items():
        with netns(ns_name) as ns:
            for ifname, tc_rate in todo:
                idx = ns.link_lookup(ifname=ifname)[0]
                ns.tc("replace", "tbf", index=idx, handle="1:", rate=tc_rate, burst=BURST_BYTES, latency="50ms")


def docker(spec: LabSpec, host: str) -> list[str]:
    """Restart a Spark's Docker: it writes its chains and its FORWARD policy (DROP) again, and
    sparkfab's unit puts the fabric's accepts back into DOCKER-USER after it."""
    from sparkfab.lab import machine

    node = next((n for n in spec.sparks if n.name == host), None)
    if node is None:
        raise UsageError(f"{host}: no such Spark in this lab")
    m = next(m for m in machine.machines(spec) if m.node.name == host)
    res = machine.run(m, "systemctl", "restart", "docker.service", timeout=120)
    if res.returncode != 0:
        raise UsageError(f"{host}: Docker did not restart: {(res.stderr or res.stdout).strip()[-300:]}")
    return [f"{host}: Docker restarted (its FORWARD policy and chains as Docker writes them)"]


def main(argv: list[str]) -> int:
    """`python -m sparkfab.lab.wire renew LAB_DIR HOST`: a rebooting machine's supervisor's call."""
    if len(argv) != 3 or argv[0] != "renew":
        sys.stderr.write("usage: python -m sparkfab.lab.wire renew LAB_DIR HOST\n")
        return 2
    renew(LabState.read(Path(argv[1])).spec, argv[2])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
