"""`sparkfab preflight`: read-only checks of what apply and serve will need, before apply
rewrites netplan.

Every host is reached the way verify and Ansible reach it (`sparkfab.connection`): the same
ssh settings, and root through `sudo -n` where the login is not root. Nothing is changed.
A failed check is a blocker (exit 4); a warning is something apply or serve will deal with or
a user should know. A lab's Sparks are checked as any (they present the hardware's facts).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from typing import Any

from sparkfab import connection
from sparkfab.connection import Connection
from sparkfab.facts.remote import Remote
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render.launch import launch
from sparkfab.verify import images
from sparkfab.verify.catalog import Check
from sparkfab.verify.preflight import host as host_checks
from sparkfab.verify.preflight import instance as instance_checks
from sparkfab.verify.result import FAIL, PASS, Report, Result, left_out


def preflight(
    plan: Plan, conn: Connection, log: Callable[[str], None] = lambda line: None, only: set[str] | None = None
) -> Report:
    """Every row for every host and instance, reached through `conn` (a lab's Sparks as any);
    a line of progress through `log` as each part ends. `only` (a --limit): the rows of those
    hosts, and of the instances they hold whole (`left_out` for the others)."""
    chosen = [h for h in plan.hosts if only is None or h.name in only]
    report = Report(plan.cluster, plan.link_speed)
    hosts: dict[str, Remote] = {}
    t0 = time.perf_counter()

    def said(what: str) -> None:
        failed = sum(r.status == FAIL for r in report.results)
        log(f"preflight: {what} ({len(report.results)} rows, {failed} blockers, {time.perf_counter() - t0:.1f} s)")

    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        parts = pool.map(lambda h: _host(plan, h, conn.remote(h.name), hosts), chosen)
        for part in parts:
            report.results += part
    said(f"login, sudo, netdevs, RDMA, netplan files, clock on {len(chosen)} hosts")
    for inst in plan.instances:
        if only is not None and not set(inst.hosts) <= only:
            report.results.append(left_out(inst.name, inst.hosts, only))
        elif set(inst.hosts) <= set(hosts):
            report.results += _instance(plan, inst, hosts)
            said(f"Docker, image, NCCL, model, ports of {inst.name}")
    return report


def _host(plan: Plan, host: Host, th: Remote, reached: dict[str, Any]) -> list[Result]:
    try:
        connection.as_root(th)
    except connection.NoRoot as exc:
        return [
            Result(
                check=Check.SSH, host=host.name, subject="login", expected="reachable", actual="reachable", status=PASS
            ),
            Result(
                check=Check.SUDO,
                host=host.name,
                subject="root",
                expected="root",
                actual="refused",
                status=FAIL,
                detail=str(exc),
            ),
        ]
    except Exception as exc:
        return [
            Result(
                check=Check.SSH,
                host=host.name,
                subject="login",
                expected="reachable",
                actual="unreachable",
                status=FAIL,
                detail=str(exc).splitlines()[0][:200],
            )
        ]
    reached[host.name] = th
    out = [
        Result(check=Check.SSH, host=host.name, subject="login", expected="reachable", actual="reachable", status=PASS),
        host_checks.sudo(host, th),
    ]
    out += host_checks.netdevs(host, th)
    out += host_checks.rdma_devices(host, th)
    out += host_checks.netplan(host, th)
    out.append(host_checks.clock(host, th))
    out += host_checks.tools(plan, host, th)
    return out


def _instance(plan: Plan, inst: Instance, hosts: dict[str, Remote]) -> list[Result]:
    if inst.recipe is None:
        return []
    lxs = {h: launch(plan, inst, plan.host(h), inst.recipe) for h in inst.hosts}
    head = lxs[inst.hosts[0]]
    out = instance_checks.ports(plan, inst, hosts[inst.hosts[0]], head)
    if head.runtime == "docker":
        out += [instance_checks.docker(h, hosts[h]) for h in inst.hosts]
        image = inst.recipe.image
        out += images.same_image(inst, image, hosts)
        out.append(images.nccl_in_image(inst, image, hosts[inst.hosts[0]], inst.direct))
        out.append(instance_checks.forward_policy(plan, inst, hosts))
    else:
        out += instance_checks.program(inst, hosts, lxs)
    out += [instance_checks.model(inst, h, hosts[h], head) for h in inst.hosts]
    return out + instance_checks.mpi(plan, inst, hosts[inst.hosts[0]])
