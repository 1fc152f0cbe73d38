"""Run every check against every host in parallel and collect one Report."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkfab.plan import Host, Plan
from sparkfab.render import sshconfig
from sparkfab.render.sshconfig import Block, multiplexed
from sparkfab.render.tree import render
from sparkfab.verify import checks, images, mesh
from sparkfab.verify.perf import perf
from sparkfab.verify.remote import Remote
from sparkfab.verify.result import FAIL, PASS, Report, Result

LLDP_WAIT_S = 8.0


def ssh_config_for(plan: Plan, workdir: Path, lab_dir: Path | None = None) -> tuple[str, dict[str, str]]:
    """The lab's ssh_config (`lab_dir`), or one written for real hosts (with a ControlPath)."""
    if lab_dir is not None:
        return str(lab_dir / "ssh_config"), {h.name: h.name for h in plan.hosts}
    workdir.mkdir(parents=True, exist_ok=True)
    mux = multiplexed(control_dir(workdir))
    blocks = [Block((h.name,), (f"HostName {h.mgmt_address}", *ssh_options(h.ansible), *mux)) for h in plan.hosts]
    comment = f"sparkfab: the hosts of {plan.cluster} as Ansible reaches them (generated)"
    cfg = workdir / "ssh_config"
    cfg.write_text(sshconfig.ssh_config(comment, blocks))
    os.chmod(cfg, 0o600)
    return str(cfg), {h.name: h.name for h in plan.hosts}


def control_dir(workdir: Path) -> Path:
    """Where the multiplexed ssh sockets go: beside the state, unless that path is too long
    for a Unix socket (108 bytes with `cm-` and a 40-character %C); then a short private
    directory in /tmp named after it."""
    if len(str(workdir)) + len("/cm-") + 40 < 100:
        return workdir
    import hashlib
    import tempfile

    short = (
        Path(tempfile.gettempdir()) / f"sparkfab-{os.getuid()}" / hashlib.sha1(str(workdir).encode()).hexdigest()[:8]
    )
    short.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(short.parent, 0o700)
    return short


#: ssh's own options that Ansible's ssh arguments may carry, as ssh_config keywords
_FLAGS = {"-J": "ProxyJump", "-i": "IdentityFile", "-p": "Port", "-l": "User", "-F": "Include"}


def ssh_options(ansible: dict[str, Any]) -> list[str]:
    """The ssh_config lines that reach a host the way Ansible's ssh connection does: its user
    (unset: ssh's default, the local user, as Ansible leaves it),
    port and key (the `ansible_ssh_*` aliases too), and what `ansible_ssh_common_args` and
    `ansible_ssh_extra_args` pass to ssh (-o, -J, -i, -p, -l, -F); the first value wins in an
    ssh_config, so the variables come before the free-form arguments, as on Ansible's command line."""
    import shlex

    def var(*names: str) -> Any:
        return next((ansible[n] for n in names if ansible.get(n) not in (None, "")), None)

    user = var("ansible_user", "ansible_ssh_user", "ansible_remote_user")
    out = [f"User {user}"] if user else []  # none set: ssh's own default, as with Ansible
    port = var("ansible_port", "ansible_ssh_port")
    out += [f"Port {port}"] if port is not None else []
    key = var("ansible_ssh_private_key_file", "ansible_private_key_file")
    out += [f"IdentityFile {key}", "IdentitiesOnly yes"] if key else []
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        words = shlex.split(str(ansible.get(name) or ""))
        i = 0
        while i < len(words):
            flag = words[i]
            value = words[i + 1] if i + 1 < len(words) else ""
            if flag == "-o" and value:
                k, _, v = value.partition("=")
                out.append(f"{k} {v}" if v else value)
                i += 2
            elif flag in _FLAGS and value:
                out.append(f"{_FLAGS[flag]} {value}")
                i += 2
            elif flag.startswith("-o") and len(flag) > 2:
                k, _, v = flag[2:].partition("=")
                out.append(f"{k} {v}")
                i += 1
            else:
                i += 1
    return out


def _per_host(plan: Plan, host: Host, th: Remote, lab: bool, files: dict[str, str]) -> list[Result]:
    if not host.ifaces:
        return []
    try:
        checks.as_root(th)
    except checks.NoRoot as exc:
        return [Result("ssh", host.name, "connection", "root (sudo -n)", "no root", FAIL, str(exc))]
    except Exception as exc:
        return [Result("ssh", host.name, "connection", "reachable", "unreachable", FAIL, str(exc)[:200])]
    out = checks.link_checks(plan, host, th, lab)
    out += checks.config_checks(plan, host, th, files)
    out += checks.jumbo_pings(plan, host, th)
    out += checks.rdma(plan, host, th, lab)
    return out


def _cabling(plan: Plan, hosts: dict[str, Remote], reachable: set[str]) -> list[Result]:
    """LLDP converges within a few transmit intervals after a re-cable: retry failures briefly."""
    deadline = time.monotonic() + LLDP_WAIT_S
    while True:
        with cf.ThreadPoolExecutor(max_workers=16) as pool:
            parts = pool.map(
                lambda h: checks.cabling(h, hosts[h.name]), [h for h in plan.hosts if h.name in reachable and h.ifaces]
            )
            results = [r for part in parts for r in part]
        if all(r.status != FAIL for r in results) or time.monotonic() > deadline:
            return results
        time.sleep(1.0)


def verify(
    plan: Plan,
    *,
    collective: bool = False,
    perf: bool = False,
    sizes: str = "4K,256K,4M,16M",
    workdir: Path,
    lab: Path | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> Report:
    """Every check on every host; `lab` (the lab directory) when the hosts are a lab's Sparks."""
    cfg, alias = ssh_config_for(plan, workdir, lab)
    files = {h: {f.path: f.content for f in fs} for h, fs in render(plan, {}, lab=lab is not None).hosts.items()}
    in_lab = lab is not None
    hosts = {h.name: checks.connect(alias[h.name], cfg) for h in plan.hosts}
    report = Report(plan.cluster, plan.link_speed)
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        parts = pool.map(lambda h: _per_host(plan, h, hosts[h.name], in_lab, files[h.name]), plan.hosts)
        for part in parts:
            report.results += part
    unreachable = {r.host for r in report.results if r.check == "ssh"}
    reachable = {h.name for h in plan.hosts} - unreachable
    report.timing["hosts_s"] = round(time.perf_counter() - t0, 2)
    report.results += _cabling(plan, hosts, reachable)
    report.results += _consistency(plan, hosts, reachable)
    report.results += images.image_checks(plan, hosts, reachable, in_lab)
    blocked = {r.host: r.actual for r in report.results if r.check == "forward-policy" and r.status == FAIL}
    for inst in plan.instances:
        if set(inst.hosts) <= reachable:
            report.results += mesh.mesh(plan, inst, hosts, blocked)
    report.timing["checks_s"] = round(time.perf_counter() - t0, 2)
    if perf:
        report.results += _perf(plan, in_lab, hosts)
    if collective:
        report.collective = {}
        for inst in plan.instances:
            broken = [
                r
                for r in report.results
                if r.check in ("reach", "tcp", "ssh") and r.status == FAIL and r.host in inst.hosts
            ]
            if broken:
                # it would only wait for its timeout: name the pair that cannot connect instead
                first = broken[0]
                report.results.append(
                    Result(
                        "collective",
                        inst.hosts[0],
                        inst.name,
                        "correct sums on every rank",
                        "not run",
                        FAIL,
                        f"the control plane does not connect: {first.host} {first.subject} {first.actual}",
                    )
                )
                continue
            res = checks.collective(plan, inst, hosts, in_lab, sizes, log)
            report.collective[inst.name] = res
            report.results.append(
                Result(
                    "collective",
                    inst.hosts[0],
                    inst.name,
                    "correct sums on every rank",
                    "correct" if res.ok else str(res.ranks),
                    PASS if res.ok else FAIL,
                    res.backend,
                )
            )
    report.timing["total_s"] = round(time.perf_counter() - t0, 2)
    return report


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
            out.append(Result.compare("engine-flags", h, inst.name, want, got, "hash of the engine-shaping flags"))
    return out


def _perf(plan: Plan, lab: bool, hosts: dict[str, Remote]) -> list[Result]:
    if lab:
        return [
            Result.skip("perf", h.name, "ib_write_bw / all_reduce_perf", "lab: no RDMA devices (veth)")
            for h in plan.hosts
            if h.ifaces
        ]
    return perf(plan, hosts)
