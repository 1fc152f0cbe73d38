"""Reachability within an instance, checked the way applications connect: from every rank to
every rank's control address, a ping and TCP connects with no bound source and no `-I` (the
kernel picks route and source), then the path followed hop by hop where a route goes through
another Spark (switchless rings)."""

from __future__ import annotations

import json
import shlex

from sparkfab.assets import program
from sparkfab.facts.netdevs import ROUTE
from sparkfab.facts.remote import Remote
from sparkfab.plan import Instance, Plan
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, Result

#: run on each source rank: a ping and TCP connects to every destination as applications make
#: them, with the source the kernel picked
PROBE = "mesh_probe.py"
MESH_WAIT_S = 3
TCP_OK = ("connected", "refused")


def mesh(plan: Plan, inst: Instance, hosts: dict[str, Remote], blocked: dict[str, str] | None = None) -> list[Result]:
    """Every rank to every rank's control address, as applications connect, with the path taken.

    One SSH command per source rank (its pings, route lookups and TCP connects to the master
    port and the API port), sources in parallel; transit hops are followed where a route goes
    through a gateway, and a failed pair is explained by a relay on its path whose forward hook
    drops (`blocked`: host -> the chain), else from the far end's return route.
    """
    import concurrent.futures as cf

    owner = {i.ip: h.name for h in plan.hosts for i in h.ifaces}
    owner.update({h.control_address: h.name for h in plan.hosts})
    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        parts = pool.map(lambda src: _mesh_from(plan, inst, hosts, owner, src, blocked or {}), inst.hosts)
        return [r for part in parts for r in part]


def _mesh_from(
    plan: Plan, inst: Instance, hosts: dict[str, Remote], owner: dict[str, str], src: str, blocked: dict[str, str]
) -> list[Result]:
    dsts = [d for d in inst.hosts if d != src]
    ports = sorted({plan.master_port, inst.port})
    targets = [[plan.host(d).control_address, ports, MESH_WAIT_S] for d in dsts]
    res = hosts[src].run(f"python3 -c {shlex.quote(program(PROBE))} {shlex.quote(json.dumps(targets))}")
    try:
        probes = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        why = (res.stderr.strip().splitlines() or [f"exit {res.rc}"])[-1][-200:]
        return [
            Result(
                check=Check.REACH,
                host=src,
                subject=f"-> {d}",
                expected="reply",
                actual="probe failed",
                status=FAIL,
                detail=why,
            )
            for d in dsts
        ]
    out = []
    for d, probe in zip(dsts, probes, strict=True):
        target = probe["dst"]
        via = probe["route"].get("gateway")
        source = probe["route"].get("prefsrc", "?")
        path = [src] + (_follow(hosts, owner, owner.get(via, via), target, len(inst.hosts)) if via else [d])
        shown = f"path {' > '.join(path)}, source {source}"
        relay = next((f"{h} drops forwarded traffic: {blocked[h]}" for h in path[1:-1] if h in blocked), None)
        ok = probe["ping"]
        detail = shown if ok else f"{shown}; {relay or _return_route(plan, hosts, d, source, src)}"
        got = "reply" if ok else "no reply"
        out.append(
            Result(
                check=Check.REACH,
                host=src,
                subject=f"-> {d} {target}",
                expected="reply",
                actual=got,
                status=PASS if ok else FAIL,
                detail=detail,
            )
        )
        for t in probe["tcp"]:
            good = t["result"] in TCP_OK
            how = f"source {t['source']}, path {' > '.join(path)}"
            if t["result"] == "refused":
                how += " (refused: nothing listens, the reset came back)"
            if not good:
                how += f"; {relay or _return_route(plan, hosts, d, t['source'], src)}"
            out.append(
                Result(
                    check=Check.TCP,
                    host=src,
                    subject=f"-> {d} {target}:{t['port']}",
                    expected="handshake",
                    actual=t["result"],
                    status=PASS if good else FAIL,
                    detail=how,
                )
            )
    return out


def _return_route(plan: Plan, hosts: dict[str, Remote], far: str, source: str, near: str) -> str:
    """Why the answer from `far` to `source` may not come back: its own route lookup."""
    if source in ("?", "0.0.0.0"):
        return f"{near} has no route to {far}"
    info = ROUTE.of(hosts[far], source)
    if not info:
        return f"missing return route: {far} has no route to {source}"
    dev, gw = info.get("dev", "?"), info.get("gateway")
    if dev not in plan.host(far).fabric_ifs:
        return f"missing return route: {far} sends replies for {source} out of {dev} (not the fabric)"
    return (
        f"{far} answers {source} via {gw or 'its link'} on {dev}: "
        "look for a relay that drops forwarded traffic (forward-policy)"
    )


def _follow(hosts: dict[str, Remote], owner: dict[str, str], here: str, target: str, limit: int) -> list[str]:
    """Transit hops: look the destination up on each relay until it is local."""
    path = [here]
    for _ in range(limit):
        if here not in hosts or owner.get(target) == here:
            return path
        via = ROUTE.of(hosts[here], target).get("gateway")
        here = owner.get(via, via) if via else owner.get(target, target)
        path.append(here)
    return path
