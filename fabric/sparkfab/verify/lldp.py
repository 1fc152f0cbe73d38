"""Cabling against the plan from LLDP neighbours, per port (Cumulus PTM semantics): pass when the
planned far end is among what the port hears, fail with expected and actual otherwise,
`missing` when a port hears nobody (a dead cable).

A Spark's two PCIe twins of a port share one wire, so each twin hears every other netdev on it:
its own twin, and both twins of the far Spark (or the switch's port). What a netdev hears is
therefore a list; the host's own chassis is left out of it, and the far end may answer from
either of its twins. Which neighbour lldpd lists last is its arrival order, never a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import cast

from sparkfab import spark
from sparkfab.facts.neighbours import Neighbour
from sparkfab.plan import Host, Iface, Plan
from sparkfab.switches import catalog, profiles
from sparkfab.verify.catalog import Check
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


def known_switches(plan: Plan) -> dict[str, profiles.KnownSwitch]:
    """A plan's switches by the system name each announces (its `lldp_name`, else its key)."""
    out = {}
    for sw in plan.switches:
        model = catalog.MODELS.get(sw.model) or catalog.generic(sw.ports, sw.port_gbps)
        os = cast(profiles.SwitchOS, sw.os)
        out[sw.lldp_name or sw.name] = profiles.known_switch(sw.name, model, os, plan.link_speed)
    return out


def _placed(plan: Plan, iface: Iface, n: Neighbour, known: dict[str, profiles.KnownSwitch]) -> bool:
    """Whether a port id names the planned switch port as the planned switch's OS names it
    (through its profile: a RouterOS bridge port's `bridge/qsfp56-dd-1-5` names `qsfp56-dd-1-5`,
    a SONiC alias `etp1a` port 1's first leg)."""
    assert iface.switch is not None
    sw = next((k for k in known.values() if k.key == iface.switch), None)
    return sw is not None and sw.place(n.port) == iface.switch_port


def _matches(
    plan: Plan,
    iface: Iface,
    want: tuple[str, str],
    n: Neighbour,
    known: dict[str, profiles.KnownSwitch],
    selves: Mapping[str, Set[str]],
) -> bool:
    """The far end the plan wants: the planned switch's system name and a port id its OS's profile
    places on the planned port and leg, or either twin of the far Spark's port, the far Spark
    known by what it says of itself (its hostname, its chassis id: `selves`) and by its key
    where it could not be asked."""
    if iface.switch:
        return n.system == want[0] and _placed(plan, iface, n, known)
    far = spark.port_of(n.port) or spark.port_of(n.descr)  # a Spark as shipped: a MAC, its name in descr
    names = selves.get(want[0])
    if names:
        heard_from = n.system in names or (bool(n.chassis) and n.chassis in names)
    else:  # not asked (a --limit): its key, or a name no Spark that was asked says is its own
        heard_from = n.system == want[0] or not any(n.system in s or n.chassis in s for s in selves.values())
    return heard_from and far is not None and far[0] == iface.peer_port


def _detail(
    plan: Plan, iface: Iface, want: tuple[str, str], heard: list[Neighbour], known: dict[str, profiles.KnownSwitch]
) -> str:
    """Why a port failed, as precisely as what it heard allows."""
    if iface.switch:
        renamed = [n for n in heard if _placed(plan, iface, n, known) and n.system != want[0]]
        if renamed:
            shipped = profiles.profile(cast(profiles.SwitchOS, plan.switch(iface.switch).os)).factory_name
            factory = f" ({shipped}'s name as shipped)" if renamed[0].system == shipped else ""
            return (
                f"the switch on this port announces itself as {renamed[0].system!r}{factory}, not {want[0]!r}: "
                f"set `lldp_name: {renamed[0].system}` on switch {iface.switch} (or rename the switch)"
            )
    return "wrong neighbour: cable in the wrong port (swapped?)"


def check_host(
    plan: Plan,
    host: Host,
    seen: dict[str, list[Neighbour]],
    own: set[str] | None = None,
    selves: Mapping[str, Set[str]] | None = None,
) -> list[Result]:
    """One row per fabric netdev: what the plan expects it to hear against what it heard
    (`own`: the host's chassis, whose announcements are its own twins'; `selves`: what each
    Spark of the plan says of itself over LLDP, its system name and chassis id, by key: a Spark
    is named as shipped, `spark-329f`, whatever the inventory calls it)."""
    selves = selves or {}
    own = (own or set()) | {host.name} | set(selves.get(host.name, ()))
    known = known_switches(plan)
    results = []
    for iface in host.ifaces:
        want = expected_neighbour(plan, iface)
        heard = foreign(seen.get(iface.netdev, []), own)
        label = f"{iface.netdev} ({iface.port})"
        expected = f"{want[0]}:{want[1]}"
        if not heard:
            detail = "missing: no LLDP neighbour (dead or unplugged cable)"
            results.append(
                Result(
                    check=Check.CABLING,
                    host=host.name,
                    subject=label,
                    expected=expected,
                    actual="-",
                    status=FAIL,
                    detail=detail,
                )
            )
            continue
        match = next((n for n in heard if _matches(plan, iface, want, n, known, selves)), None)
        actual = str(match) if match else ", ".join(str(n) for n in heard)
        detail = "" if match else _detail(plan, iface, want, heard, known)
        results.append(
            Result(
                check=Check.CABLING,
                host=host.name,
                subject=label,
                expected=expected,
                actual=actual,
                status=PASS if match else FAIL,
                detail=detail,
            )
        )
    return results
