"""Cables from what every port heard: each Spark's view of its netdevs (its own twins left out),
a far end per port (a Spark's port, a switch port its OS's profile places, or a port id no
profile places), and the cables in ring order, with everything odd said."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sparkfab.facts.neighbours import Neighbour
from sparkfab.spark import LinkSpeed, port_of
from sparkfab.switches import profiles
from sparkfab.verify import lldp


@dataclass
class HostView:
    label: str  # the name discovery uses for it (inventory name, or its hostname)
    address: str
    hostname: str = ""
    chassis: set[str] = field(default_factory=set)  # chassis ids (MACs) and its system name
    ports: dict[str, list[Neighbour]] = field(default_factory=dict)  # netdev -> what it heard
    fabric: list[str] = field(default_factory=list)
    carrier: set[str] = field(default_factory=set)  # fabric netdevs with carrier when last read
    macs: dict[str, str] = field(default_factory=dict)  # fabric netdev's MAC -> netdev
    own_macs: set[str] = field(default_factory=set)  # every MAC of the host (its twins' frames)
    lldpd: bool = False  # whether lldpd answered on it
    odd: list[str] = field(default_factory=list)  # what it heard that cannot be trusted
    error: str = ""


@dataclass(frozen=True)
class Discovery:
    """What discover found: the cables in ring order, what each host saw, and what did not fit."""

    cables: list[list[str]]
    hosts: dict[str, HostView]
    odd: list[str]
    switches: dict[str, profiles.KnownSwitch] = field(default_factory=dict)  # by key: those the cables name
    mode: LinkSpeed = "200"

    def to_dict(self) -> dict[str, Any]:
        return {
            "cables": self.cables,
            "odd": self.odd,
            "hosts": {
                k: {
                    "address": v.address,
                    "hostname": v.hostname,
                    "error": v.error,
                    "neighbours": {n: [list(x) for x in heard] for n, heard in v.ports.items()},
                }
                for k, v in self.hosts.items()
            },
        }


def own(view: HostView) -> set[str]:
    """The names and chassis ids a host's own twins announce."""
    return view.chassis | {view.hostname, view.label} - {""}


def heard(view: HostView, netdev: str) -> list[Neighbour]:
    """What a netdev heard from other hosts (its own twin left out)."""
    return lldp.foreign(view.ports.get(netdev, []), own(view))


def unheard(view: HostView) -> set[str]:
    """The ports with carrier that have not heard another host yet."""
    return set() if view.error else {n for n in view.carrier if not heard(view, n)}


@dataclass(frozen=True)
class FarEnd:
    """What a port's LLDP neighbour is: a Spark's port, a switch port, or a port id we cannot place."""

    node: str  # the Spark's name, else the system name it announced
    port: str  # p0/p1, a switch's "port/lane", or the raw port id
    kind: Literal["spark", "switch", "unknown"] = "spark"

    def __str__(self) -> str:
        node, port = shown(self.node), shown(self.port)  # what a device announced, escaped
        return f"{node}:{port}" if self.kind != "unknown" else f"{node} (port id {port})"


Ends = dict[tuple[str, str], dict[int, FarEnd]]  # (host, port) -> root -> far end


def _far_end(by_name: dict[str, str], switches: dict[str, profiles.KnownSwitch | None], n: Neighbour) -> FarEnd:
    """A Spark's port (also a Spark that did not answer: its port id names a netdev), else a
    switch's port placed through its profile, else a port id we cannot place."""
    peer, peer_port = by_name.get(n.system), port_of(n.port)
    if peer is not None or peer_port is not None:
        return FarEnd(peer or n.system, peer_port[0]) if peer_port else FarEnd(peer or n.system, n.port, "unknown")
    sw = switches.get(n.system)
    at = sw.place(n.port) if sw else None
    return FarEnd(sw.key, at, "switch") if sw and at else FarEnd(n.system, n.port, "unknown")


def _switches(
    views: dict[str, HostView], known: dict[str, profiles.KnownSwitch], mode: LinkSpeed, beyond: frozenset[str]
) -> dict[str, profiles.KnownSwitch | None]:
    """Every system that is not a Spark, by the name it announces: a switch the inventory names
    (by its `lldp_name` or key), else one guessed from its port ids (None: no profile fits)."""
    sparks = {n for v in views.values() for n in own(v)} | beyond
    ports: dict[str, list[str]] = {}
    for v in views.values():
        for netdev in v.ports:
            for n in heard(v, netdev):
                if n.system not in sparks and port_of(n.port) is None:
                    ports.setdefault(n.system, []).append(n.port)
    return {s: known.get(s) or profiles.guessed_switch(s, p, mode) for s, p in ports.items()}


def _by_mac(views: dict[str, HostView], n: Neighbour) -> Neighbour:
    """A Spark's neighbour as lldpd announces it as shipped (its port id the netdev's MAC, not its
    name: `portidsubtype ifname` is sparkfab's setting, made by apply), named by that netdev: the
    MAC as the far Spark lists its links, else the port description (lldpd's default is the
    interface's name) for a Spark that did not answer."""
    for v in views.values():
        netdev = v.macs.get(n.port.lower())
        if netdev:
            return Neighbour(v.label, netdev, n.chassis, n.descr)
    if port_of(n.port) is None and port_of(n.descr) is not None:  # a Spark that did not answer
        return Neighbour(n.system, n.descr, n.chassis, n.descr)
    return n


def shown(text: str, width: int = 64) -> str:
    """A name a device announced, as a message may show it: as it is when it is a plain name,
    else quoted with every unusual character escaped (a newline, an escape sequence, a bidi
    control), and cut."""
    plain = text.isascii() and text.isprintable() and " " not in text and len(text) <= width
    return text if plain and text else ascii(text)[: width + 2] + ("..." if len(ascii(text)) > width + 2 else "")


_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z")


def _untrusted(system: str, heard: list[Neighbour], chassis: set[str]) -> str:
    """Why a name no answering Spark has cannot be trusted (empty: it can)."""
    if len(chassis) > 1:
        return f"{len(chassis)} devices (chassis {', '.join(shown(c) for c in sorted(chassis)[:3])}) announce it"
    if len({"spark" if port_of(n.port) or port_of(n.descr) else "switch" for n in heard}) > 1:
        return "it is heard both as a Spark's netdev and as a switch port"
    return "" if _KEY.match(system) else "it could be no inventory's name"


def _heard_where(views: dict[str, HostView]) -> dict[str, list[tuple[str, str, Neighbour]]]:
    """Every neighbour by the name it announced: (host, netdev, neighbour) each time it was heard."""
    where: dict[str, list[tuple[str, str, Neighbour]]] = {}
    for v in views.values():
        for netdev, found in v.ports.items():
            for n in found:
                where.setdefault(n.system, []).append((v.label, netdev, n))
    return where


def distrust(views: dict[str, HostView], beyond: frozenset[str], odd: list[str]) -> None:
    """Take out of every view what cannot be trusted, saying what was heard where: a device that
    announces an answering Spark's name from a chassis that is not that Spark's; a name that two
    devices announce (two chassis); one heard both as a Spark's netdev and as a switch port; a name
    that could be no inventory's key. Never a silent choice between them."""
    sparks = {n: v for v in views.values() if not v.error for n in own(v)}
    where = _heard_where(views)
    bad: set[tuple[str, str]] = set()  # (system, chassis); chassis "*": every neighbour of that name
    for system, heard_at in sorted(where.items()):
        at = ", ".join(sorted({f"{h}:{d}" for h, d, _ in heard_at})[:4])
        chassis = {n.chassis for _, _, n in heard_at if n.chassis}
        if system in sparks:
            s = sparks[system]  # its chassis can be told only where its every MAC was read
            mine = {x.lower() for x in s.chassis | s.own_macs} if s.own_macs else None
            for c in sorted(chassis - (mine or set()) - {x.upper() for x in mine or ()}) if mine else ():
                odd.append(
                    f"a device (chassis {shown(c)}) announces the name of {sparks[system].label} on {at}: not trusted"
                )
                bad.add((system, c))
            continue
        if system in beyond:
            continue
        why = _untrusted(system, [n for _, _, n in heard_at], chassis)
        if why:
            odd.append(f"the name {shown(system)} heard on {at} is not trusted: {why}; no cable through it")
            bad.add((system, "*"))
    for v in views.values():
        for netdev, found in v.ports.items():
            v.ports[netdev] = [n for n in found if (n.system, "*") not in bad and (n.system, n.chassis) not in bad]


def _ends(
    views: dict[str, HostView],
    odd: list[str],
    switches: dict[str, profiles.KnownSwitch | None],
    beyond: frozenset[str],
) -> Ends:
    by_name = {n: n for n in beyond} | {n: v.label for v in views.values() if not v.error for n in own(v)}
    ends: Ends = {}
    for v in (x for x in views.values() if not x.error):
        odd += [f"{v.label}:{netdev} has no LLDP neighbour" for netdev in v.fabric if not heard(v, netdev)]
        for netdev in sorted(v.ports):
            fars = sorted({_far_end(by_name, switches, _by_mac(views, n)) for n in heard(v, netdev)}, key=str)
            if not fars:
                continue
            if len(fars) > 1:  # a leak between switch ports, a second device on the wire: never a choice
                odd.append(
                    f"{v.label}:{netdev} hears several far ends: {', '.join(str(f) for f in fars[:6])}"
                    f"{' and more' if len(fars) > 6 else ''}; no cable from it"
                )
                continue
            port, root = port_of(netdev) or ("", 0)
            ends.setdefault((v.label, port), {})[root] = fars[0]
    return ends


def _cable(
    views: dict[str, HostView], ends: Ends, host: str, port: str, far: FarEnd, odd: list[str], beyond: frozenset[str]
) -> list[str] | None:
    if far.kind == "switch":
        return [f"{host}:{port}", str(far)]
    if far.kind == "unknown":
        if port_of(far.port) is None and far.node not in views:
            odd.append(
                f"{host}:{port} sees {far}, which is neither a Spark of the list nor a switch port that a profile"
                f" ({', '.join(profiles.OS_NAMES)}) places: name the switch in the inventory (model, os, lldp_name)"
            )
        else:
            odd.append(f"{host}:{port} sees {far}, which is not in the list of Sparks")
        return None
    if (far.node, far.port) not in ends and far.node not in beyond:
        why = (
            "" if far.node in views and not views[far.node].error else f" ({far.node} did not answer or is not listed)"
        )
        odd.append(f"cable {host}:{port} - {far} is seen from one end only{why}")
    return [f"{host}:{port}", str(far)]


def _name_beyond(views: dict[str, HostView], planned: dict[tuple[str, str], str], beyond: frozenset[str]) -> None:
    """A Spark a --limit left out is not asked, so its name as shipped (what it announces) is not
    known: on a netdev the inventory cables to it (`planned`: (host, netdev) -> its key), the Spark
    heard there is taken for it, named by its key."""
    asked = {n for v in views.values() for n in own(v)}
    alias: dict[str, str] = {}
    for (host, netdev), key in planned.items():
        view = views.get(host)
        if view is None or key not in beyond:
            continue
        for n in heard(view, netdev):
            if n.system not in asked and n.system not in beyond and (port_of(n.port) or port_of(n.descr)):
                alias.setdefault(n.system, key)
    for v in views.values():
        for netdev, found in v.ports.items():
            v.ports[netdev] = [n._replace(system=alias.get(n.system, n.system)) for n in found]


def derive(
    views: dict[str, HostView],
    order: list[str],
    known: dict[str, profiles.KnownSwitch] | None = None,
    mode: LinkSpeed = "200",
    beyond: frozenset[str] = frozenset(),
    planned: dict[tuple[str, str], str] | None = None,
) -> Discovery:
    """The cables from what every port heard (`known`: the inventory's switches by the name each
    announces; `mode`: the link speed, which says how many legs a switch port breaks out into;
    `beyond`: the inventory's Sparks a --limit left out, not asked: a far end is one of them when
    it announces that name, as verify names a far Spark, and its cables are seen from one end)."""
    odd = [f"{v.label} ({v.address}) does not answer: {v.error}" for v in views.values() if v.error]
    odd += [line for v in views.values() for line in v.odd]
    _name_beyond(views, planned or {}, beyond)
    distrust(views, beyond, odd)
    switches = _switches(views, known or {}, mode, beyond)
    ends = _ends(views, odd, switches, beyond)
    cables: dict[frozenset[str], list[str]] = {}
    for (host, port), roots in sorted(ends.items()):
        if len(set(roots.values())) > 1:
            seen = ", ".join(f"root {r} sees {far}" for r, far in sorted(roots.items()))
            odd.append(f"{host}:{port}: its twins disagree: {seen}")
        far = roots.get(0) or roots.get(1)
        cable = _cable(views, ends, host, port, far, odd, beyond) if far else None
        if cable:
            cables.setdefault(frozenset(cable), cable)
    wired = {c[1].split(":")[0] for c in cables.values()}
    used = {sw.key: sw for sw in switches.values() if sw and sw.key in wired}
    return Discovery(_ring_order(list(cables.values()), order), views, odd, used, mode)


def _ring_order(cables: list[list[str]], order: list[str]) -> list[list[str]]:
    """Cables in walking order from the first listed Spark, toward the neighbour listed earliest,
    so that the ranks of the written inventory follow the order the hosts were given in."""
    rank = {h: i for i, h in enumerate(order)}

    def node(end: str) -> str:
        return end.split(":")[0]

    left = list(cables)
    out: list[list[str]] = []
    here = order[0] if order else None
    while left and here is not None:
        mine = [c for c in left if here in (node(c[0]), node(c[1]))]
        if not mine:
            break
        mine.sort(key=lambda c: rank.get(node(c[1]) if node(c[0]) == here else node(c[0]), 10**6))
        c = mine[0]
        c = c if node(c[0]) == here else [c[1], c[0]]
        out.append(c)
        left.remove(mine[0])
        here = node(c[1]) if node(c[1]) in rank else here
    return out + sorted(left)
