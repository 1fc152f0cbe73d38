"""Run every check against every host in parallel and collect one Report."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from typing import cast

from sparkfab import connection
from sparkfab.connection import Connection
from sparkfab.facts import gather
from sparkfab.facts.neighbours import NEIGHBOURS, Heard
from sparkfab.facts.remote import Remote
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render.tree import render
from sparkfab.switches import profiles
from sparkfab.verify import checks, images, mesh, serving, transport
from sparkfab.verify.catalog import Check
from sparkfab.verify.expect import expect
from sparkfab.verify.perf import perf as run_perf
from sparkfab.verify.result import FAIL, PASS, Report, Result, left_out

LLDP_WAIT_S = 8.0


def _per_host(plan: Plan, host: Host, hosts: dict[str, Remote], files: dict[str, str]) -> list[Result]:
    """The checks of one host, answered from one gathering of its facts (`gather.prefetch`);
    `hosts[host.name]` becomes that gathering, for the cabling's first look and the rest."""
    if not host.ifaces:
        return []
    try:
        connection.as_root(hosts[host.name])
    except connection.NoRoot as exc:
        return [
            Result(
                check=Check.SSH,
                host=host.name,
                subject="connection",
                expected="root (sudo -n)",
                actual="no root",
                status=FAIL,
                detail=str(exc),
            )
        ]
    except Exception as exc:
        return [
            Result(
                check=Check.SSH,
                host=host.name,
                subject="connection",
                expected="reachable",
                actual="unreachable",
                status=FAIL,
                detail=str(exc)[:200],
            )
        ]
    exp = expect(plan.mode_of(host.name))
    th = hosts[host.name] = gather.prefetch(hosts[host.name], *checks.wanted(plan, host, files, exp))
    out = checks.link_checks(plan, host, th, exp)
    out += checks.config_checks(plan, host, th, files)
    out += checks.jumbo_pings(plan, host, th)
    out += checks.rdma(plan, host, th, exp)
    return out


def _heard(hosts: dict[str, Remote], names: list[str]) -> dict[str, Heard]:
    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        return dict(zip(names, pool.map(lambda h: NEIGHBOURS.of(hosts[h]), names), strict=True))


def _patience(plan: Plan, failed: list[Result], heard: dict[str, Heard]) -> float:
    """How long cabling may wait for what is missing: a few seconds for Sparks (they are asked to
    announce now), a switch's whole interval for a switch port that heard nobody yet (a switch
    announces on its own timer: 30 s as its OS is shipped; nobody can ask it for a frame now),
    unless the netdev has no carrier (nothing will be heard on it, however long)."""
    wait = LLDP_WAIT_S
    for r in failed:
        iface = next((i for i in plan.host(r.host).ifaces if r.subject.startswith(i.netdev + " ")), None)
        carrier = heard[r.host].carrier if r.host in heard else None
        dark = carrier is not None and iface is not None and iface.netdev not in carrier
        if iface is not None and iface.switch and r.actual == "-" and not dark:
            os = cast(profiles.SwitchOS, plan.switch(iface.switch).os)
            wait = max(wait, profiles.profile(os).wire.interval_s + LLDP_WAIT_S)
    return wait


def _cabling(plan: Plan, hosts: dict[str, Remote], reachable: set[str], log: Callable[[str], None]) -> list[Result]:
    """Every host's cabling rows, each far Spark known by what it says of itself. LLDP converges
    within a transmit interval after a re-cable or a restart of lldpd: failures are read again,
    the Sparks asked to announce now, for as long as `_patience` allows."""
    names = [h.name for h in plan.hosts if h.name in reachable and h.ifaces]
    start, asked = time.monotonic(), False
    while True:
        heard = _heard(hosts, names)
        selves = {h: frozenset(v.own) for h, v in heard.items() if v.answered and v.own}
        results = [r for h in names for r in checks.cabling(plan, plan.host(h), heard[h], selves)]
        failed = [r for r in results if r.status == FAIL]
        patience = _patience(plan, failed, heard)
        waited = time.monotonic() - start
        if not failed or waited > patience:
            return results
        if not asked:
            with cf.ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(lambda h: hosts[h].run("lldpcli update"), names))
            asked = True
        if patience > LLDP_WAIT_S:
            missing = sorted({f"{r.host}:{r.subject.split()[0]}" for r in failed if r.actual == "-"})
            log(
                f"verify: waiting for the switch's LLDP on {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}"
                f" ({waited:.0f} of {patience:.0f} s: a switch announces on its own interval)"
            )
        time.sleep(1.0)


def verify(
    plan: Plan,
    *,
    collective: bool = False,
    perf: bool = False,
    sizes: str = "4K,256K,4M,16M",
    conn: Connection,
    log: Callable[[str], None] = lambda s: None,
    only: set[str] | None = None,
) -> Report:
    """Every check on every host, reached through `conn` (a lab's Sparks are checked as any).
    `only` (a --limit): the checks of those hosts, and those across an instance's ranks for the
    instances they hold whole; an instance they hold in part gets a row that says so."""
    chosen = [h for h in plan.hosts if only is None or h.name in only]
    files = {h: {f.path: f.content for f in fs} for h, fs in render(plan, {}).hosts.items()}
    hosts = {h.name: conn.remote(h.name) for h in chosen}
    report = Report(plan.cluster, plan.link_speed)
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        parts = pool.map(lambda h: _per_host(plan, h, hosts, files[h.name]), chosen)
        for part in parts:
            report.results += part
    unreachable = {r.host for r in report.results if r.check == Check.SSH}
    reachable = {h.name for h in chosen} - unreachable
    partial = set() if only is None else {i.name for i in plan.instances if not set(i.hosts) <= only}
    report.results += [left_out(i.name, i.hosts, only) for i in plan.instances if i.name in partial and only]
    report.timing["hosts_s"] = round(time.perf_counter() - t0, 2)
    _said(log, report, f"links, addresses, sysctls, firewall, files, jumbo pings, RDMA on {len(reachable)} hosts", t0)
    report.results += _cabling(plan, hosts, reachable, log)
    report.results += _consistency(plan, hosts, reachable)
    report.results += images.image_checks(plan, hosts, reachable)
    states = serving.rank_states(plan, {h: hosts[h] for h in reachable})
    report.results += serving.results([s for s in states if s.instance not in partial])
    running = [(s.instance, s.host) for s in states if s.state == serving.RUNNING and s.instance not in partial]
    report.results += transport.transports(plan, hosts, running)
    _said(log, report, "cabling, engine flags, images, serving", t0)
    blocked = {r.host: r.actual for r in report.results if r.check == Check.FORWARD_POLICY and r.status == FAIL}
    for inst in plan.instances:
        if set(inst.hosts) <= reachable:
            report.results += mesh.mesh(plan, inst, hosts, blocked)
            _said(log, report, f"mesh of {inst.name}'s ranks", t0)
    report.timing["checks_s"] = round(time.perf_counter() - t0, 2)
    if perf:
        report.results += run_perf(plan, hosts)
        _said(log, report, "perftest and nccl-tests", t0)
    if collective:
        report.collective = {}
        for inst in plan.instances:
            if inst.name in partial:
                continue
            broken = [
                r
                for r in report.results
                if r.check in (Check.REACH, Check.TCP, Check.SSH) and r.status == FAIL and r.host in inst.hosts
            ]
            if broken:
                # it would only wait for its timeout: name the pair that cannot connect instead
                first = broken[0]
                why = f"the control plane does not connect: {first.host} {first.subject} {first.actual}"
                report.results.append(_collective_row(inst, "not run", False, why))
                continue
            backend = checks.collective_backend(inst, hosts[inst.hosts[0]])
            res = checks.collective(plan, inst, hosts, backend, sizes, log)
            report.collective[inst.name] = res
            report.results.append(_collective_row(inst, "correct" if res.ok else str(res.ranks), res.ok, res.backend))
    report.timing["total_s"] = round(time.perf_counter() - t0, 2)
    return report


def _said(log: Callable[[str], None], report: Report, what: str, t0: float) -> None:
    """A line of progress: what was checked, how it stands so far, since when."""
    failed = sum(r.status == FAIL for r in report.results)
    log(f"verify: {what} ({len(report.results)} checks, {failed} failed, {time.perf_counter() - t0:.1f} s)")


def _consistency(plan: Plan, hosts: dict[str, Remote], reachable: set[str]) -> list[Result]:
    """The engine-flag hash must be the same on every rank (a mismatch hangs start-up)."""
    import json

    out = []
    for inst in plan.instances:
        if inst.launcher is None or not set(inst.hosts) <= reachable:
            continue
        seen = {}
        for h in inst.hosts:
            f = hosts[h].file(f"/etc/sparkfab/launch/{inst.name}.json")
            seen[h] = json.loads(f.content_string).get("engine_flag_hash", "")[:12] if f.exists else "absent"
        want = seen[inst.hosts[0]]
        for h, got in seen.items():
            out.append(Result.compare(Check.ENGINE_FLAGS, h, inst.name, want, got, "hash of the engine-shaping flags"))
    return out


def _collective_row(inst: Instance, actual: str, ok: bool, detail: str) -> Result:
    """The all-reduce's row of an instance: correct sums on every rank, or why not."""
    return Result(
        check=Check.COLLECTIVE,
        host=inst.hosts[0],
        subject=inst.name,
        expected="correct sums on every rank",
        actual=actual,
        status=PASS if ok else FAIL,
        detail=detail,
    )
