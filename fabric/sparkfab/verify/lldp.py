"""Cabling against the plan from LLDP neighbours, per port (Cumulus PTM semantics): pass when the
planned far end is among what the port hears, fail with expected and actual otherwise,
`missing` when a port hears nobody (a dead cable).

A Spark's two PCIe twins of a port share one wire, so each twin hears every other netdev on it:
its own twin, and both twins of the far Spark (or the switch's port). What a netdev hears is
therefore a list; the host's own chassis is left out of it, and the far end may answer from
either of its twins. Which neighbour lldpd lists last is its arrival order, never a verdict.
"""

from __future__ import annotations

from typing import cast

from sparkfab import catalog, spark, switchos
from sparkfab.facts.neighbours import Neighbour
from sparkfab.plan import Host, Iface, Plan
from sparkfab.verify.result import FAIL, PASS, Result


def foreign(heard: list[Neighbour], own: set[str]) -> list[Neighbour]:
    """What a netdev hears from other hosts: its own twin (the host's chassis) left out, each
    neighbour once."""
    out: list[Neighbour] = []
    for n in heard:
        if n.system not in own and (not n.chassis or n.chassis not in own) and n not in out:
            out.append(n)
    return out


def expected_neighbour(plan: Plan, iface: Iface) -> tuple[str, str]:
    """(system name, port id) the planned far end announces; a Spark from the twin on this
    netdev's PCIe root (its other twin is as good a witness: `_matches`)."""
    if iface.switch:
        return plan.switch(iface.switch).lldp_name, iface.switch_port_id or ""
    return iface.peer_host or "", iface.peer_netdev or ""


def known_switches(plan: Plan) -> dict[str, switchos.KnownSwitch]:
    """A plan's switches by the system name each announces (its `lldp_name`, else its key)."""
    out = {}
    for sw in plan.switches:
        model = catalog.MODELS.get(sw.model) or catalog.generic(sw.ports, sw.port_gbps)
        os = cast(switchos.SwitchOS, sw.os)
        out[sw.lldp_name or sw.name] = switchos.known_switch(sw.name, model, os, plan.link_speed)
    return out


def _matches(iface: Iface, want: tuple[str, str], n: Neighbour, known: dict[str, switchos.KnownSwitch]) -> bool:
    """The far end the plan wants: a switch's port id as its OS names the lane (or, for a generic
    switch of unknown naming, one its profile places on the same port and leg), or either twin
    of the far Spark's port."""
    if iface.switch:
        if n.system != want[0]:
            return False
        sw = known.get(want[0])
        return n.port == want[1] or (sw is not None and sw.os == "generic" and sw.place(n.port) == iface.switch_port)
    far = spark.port_of(n.port) or spark.port_of(n.descr)  # a Spark as shipped: a MAC, its name in descr
    return n.system == want[0] and far is not None and far[0] == iface.peer_port


def _detail(plan: Plan, iface: Iface, want: tuple[str, str], heard: list[Neighbour]) -> str:
    """Why a port failed, as precisely as what it heard allows."""
    if iface.switch:
        renamed = [n for n in heard if n.port == want[1] and n.system != want[0]]
        if renamed:
            shipped = switchos.profile(cast(switchos.SwitchOS, plan.switch(iface.switch).os)).factory_name
            factory = f" ({shipped}'s name as shipped)" if renamed[0].system == shipped else ""
            return (
                f"the switch on this port announces itself as {renamed[0].system!r}{factory}, not {want[0]!r}: "
                f"set `lldp_name: {renamed[0].system}` on switch {iface.switch} (or rename the switch)"
            )
    return "wrong neighbour: cable in the wrong port (swapped?)"


def check_host(plan: Plan, host: Host, seen: dict[str, list[Neighbour]], own: set[str] | None = None) -> list[Result]:
    """One row per fabric netdev: what the plan expects it to hear against what it heard
    (`own`: the host's chassis, whose announcements are its own twins')."""
    own = (own or set()) | {host.name}
    known = known_switches(plan)
    results = []
    for iface in host.ifaces:
        want = expected_neighbour(plan, iface)
        heard = foreign(seen.get(iface.netdev, []), own)
        label = f"{iface.netdev} ({iface.port})"
        expected = f"{want[0]}:{want[1]}"
        if not heard:
            detail = "missing: no LLDP neighbour (dead or unplugged cable)"
            results.append(Result("cabling", host.name, label, expected, "-", FAIL, detail))
            continue
        match = next((n for n in heard if _matches(iface, want, n, known)), None)
        actual = str(match) if match else ", ".join(str(n) for n in heard)
        detail = "" if match else _detail(plan, iface, want, heard)
        results.append(Result("cabling", host.name, label, expected, actual, PASS if match else FAIL, detail))
    return results
