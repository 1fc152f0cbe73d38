"""Checks that talk to the hosts, through pytest-testinfra's ssh backend.

Connections are multiplexed through the ssh_config's ControlPath (testinfra adds
ControlMaster/ControlPersist but no ControlPath, which alone makes it several times slower).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Mapping, Set
from typing import Any

from sparkfab.facts import gather, nft
from sparkfab.facts.neighbours import NEIGHBOURS, Heard
from sparkfab.facts.netdevs import ADDRESSES, LINKS, SPEEDS
from sparkfab.facts.rdma import port_files
from sparkfab.facts.remote import Remote
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render import control
from sparkfab.render.control import forward_pairs
from sparkfab.render.launch import container_options, export_env
from sparkfab.verify import firewall, hardware, lldp
from sparkfab.verify.catalog import Check
from sparkfab.verify.expect import Expect
from sparkfab.verify.result import FAIL, PASS, CollectiveResult, Result


def _netdevs(host: Host) -> list[str]:
    return [i.netdev for i in host.ifaces]


def _ping_command(plan: Plan, netdev: str, peer: str) -> str:
    return f"ping -M do -s {plan.mtu - 28} -c 3 -i 0.2 -W 1 -I {netdev} {peer}"


def _sysctl_names(plan: Plan, host: Host) -> list[str]:
    return list(control.sysctls(plan, host))


def _config_paths(files: dict[str, str]) -> list[str]:
    return sorted(p for p in files if p.endswith(("nccl.env", ".json")) and "/etc/sparkfab/" in p)


def wanted(plan: Plan, host: Host, files: dict[str, str], exp: Expect) -> tuple[list[str], list[str]]:
    """The commands and the files the checks of `host` will ask for (what `gather.prefetch`
    gathers in one round trip), from the facts the checks ask: one missing here only costs a
    round trip of its own."""
    commands = [LINKS.command(), ADDRESSES.command(), SPEEDS.command(_netdevs(host)), NEIGHBOURS.command()]
    commands += [gather.sysctl_command(name) for name in _sysctl_names(plan, host)]
    if plan.control_plane == "fabric" and host.ifaces:
        commands += [nft.TABLE.command()] + ([nft.RULESET.command()] if host.forwarding else [])
    commands += [_ping_command(plan, iface.netdev, peer) for iface, peer in _rail_peers(plan, host)]
    paths = _config_paths(files)
    paths += [p for iface in host.ifaces if iface.rdma in host.hca[exp.mode] for p in port_files(iface.rdma)]
    return commands, paths


def link_checks(plan: Plan, host: Host, th: Remote, exp: Expect) -> list[Result]:
    links = LINKS.of(th)
    addrs = ADDRESSES.of(th)
    speeds = SPEEDS.of(th, _netdevs(host))
    out = []
    for iface in host.ifaces:
        name = iface.netdev
        link = links.get(name)
        if link is None:
            out.append(
                Result(
                    check=Check.NETDEV,
                    host=host.name,
                    subject=name,
                    expected="present",
                    actual="absent",
                    status=FAIL,
                    detail="no such interface",
                )
            )
            continue
        out.append(Result.compare(Check.UP, host.name, name, "UP", "UP" if link.up else "DOWN"))
        out.append(
            Result.compare(
                Check.CARRIER,
                host.name,
                name,
                1,
                int(link.carrier),
                "" if link.carrier else "no carrier: cable unplugged or far end down",
            )
        )
        out.append(Result.compare(Check.MTU, host.name, name, plan.mtu, link.mtu))
        out.append(Result.compare(Check.IPV4, host.name, name, [iface.address], addrs.get(name, [])))
        speed = speeds.get(name)
        why = "" if speed == exp.netdev_mbps else f"link speed {exp.mode} expects {exp.netdev_mbps}"
        out.append(Result.compare(Check.SPEED, host.name, name, exp.netdev_mbps, speed, why))
    return out


def config_checks(plan: Plan, host: Host, th: Remote, files: dict[str, str]) -> list[Result]:
    out = []
    for key, want in control.sysctls(plan, host).items():
        try:
            got = th.sysctl(key)
        except AssertionError:  # the key is not there: its netdev is missing (its link row says so)
            got = "absent"
        out.append(Result.compare(Check.SYSCTL, host.name, key, want, got))
    if plan.control_plane == "fabric" and host.ifaces:
        loaded = nft.TABLE.of(th)
        out.append(
            Result.compare(Check.FIREWALL, host.name, "table inet sparkfab", "loaded", "loaded" if loaded else "absent")
        )
        if host.forwarding:
            out.append(forward_policy(host, th))
    for path in _config_paths(files):
        f = th.file(path)
        actual = f.content_string if f.exists else None
        status = PASS if actual == files[path] else FAIL
        detail = (
            "" if status == PASS else ("missing: run `sparkfab apply`" if actual is None else "differs from the plan")
        )
        out.append(
            Result(
                check=Check.FILE,
                host=host.name,
                subject=path,
                expected="as rendered",
                actual="as rendered" if status == PASS else ("absent" if actual is None else "different"),
                status=status,
                detail=detail,
            )
        )
    return out


def forward_policy(host: Host, th: Remote) -> Result:
    """A relay's forward hook: a drop in any other base chain (Docker's) kills relayed control traffic."""
    ruleset = nft.RULESET.of(th)
    if not ruleset.document:
        return Result(
            check=Check.FORWARD_POLICY,
            host=host.name,
            subject="forward hook",
            expected="readable",
            actual="nft failed",
            status=FAIL,
            detail=ruleset.error,
        )
    bad, bypassed = firewall.blockers(ruleset.document, forward_pairs(host))
    if bad:
        return Result(
            check=Check.FORWARD_POLICY,
            host=host.name,
            subject="forward hook",
            expected="fabric pairs accepted",
            actual=bad[0],
            status=FAIL,
            detail="an accept in inet sparkfab cannot override another chain's drop: `sparkfab apply` adds the "
            "fabric pairs to DOCKER-USER (Docker's hook); for any other firewall, admit them there",
        )
    actual = "accepted in DOCKER-USER past " + bypassed[0] if bypassed else "no drop policy"
    return Result(
        check=Check.FORWARD_POLICY,
        host=host.name,
        subject="forward hook",
        expected="fabric pairs accepted",
        actual=actual,
        status=PASS,
    )


def jumbo_pings(plan: Plan, host: Host, th: Remote) -> list[Result]:
    out = []
    for iface, peer in _rail_peers(plan, host):
        res = th.run(_ping_command(plan, iface.netdev, peer))
        out.append(
            Result(
                check=Check.JUMBO_PING,
                host=host.name,
                subject=f"{iface.netdev} -> {peer}",
                expected=f"{plan.mtu} bytes, DF",
                actual="reply" if res.rc == 0 else "no reply",
                status=PASS if res.rc == 0 else FAIL,
                detail="" if res.rc == 0 else (res.stdout.strip().splitlines() or [""])[-1],
            )
        )
    return out


def _rail_peers(plan: Plan, host: Host) -> list[tuple[Any, str]]:
    """Direct cables: the far end. Switch: the next rank's address on the same rail."""
    pairs = []
    inst = plan.instance_of(host.name)
    for iface in host.ifaces:
        if iface.peer_address:
            pairs.append((iface, iface.peer_address))
            continue
        others = list(inst.hosts) if inst else [h.name for h in plan.hosts]
        nxt = others[(others.index(host.name) + 1) % len(others)] if host.name in others else None
        if nxt and nxt != host.name:
            mate = next((i for i in plan.host(nxt).ifaces if i.rail == iface.rail), None)
            if mate:
                pairs.append((iface, mate.ip))
    return pairs


def cabling(plan: Plan, host: Host, heard: Heard, selves: Mapping[str, Set[str]] | None = None) -> list[Result]:
    """The cabling rows of `host` from what its lldpd heard (`selves`: what every Spark says of
    itself over LLDP, by key)."""
    if not heard.answered:
        return [
            Result(
                check=Check.CABLING,
                host=host.name,
                subject="lldpd",
                expected="running",
                actual="not answering",
                status=FAIL,
                detail=(
                    "lldpd must run on the Spark: apply installs it and sets its port ids (or `apt-get install lldpd`)"
                ),
            )
        ]
    if heard.unreadable:  # lldpd answered, but its listing does not parse: say so, not "missing"
        return [
            Result(
                check=Check.CABLING,
                host=host.name,
                subject="lldpd",
                expected="a readable listing",
                actual="unreadable",
                status=FAIL,
                detail=heard.unreadable,
            )
        ]
    carrier = heard.carrier if heard.carrier is not None else set(_netdevs(host))
    # a neighbour lldpd still lists on a port without carrier is what it heard before the cable went
    seen = {k: v for k, v in heard.ports.items() if k in carrier}
    return lldp.check_host(plan, host, seen, set(heard.own), selves)


def rdma(plan: Plan, host: Host, th: Remote, exp: Expect) -> list[Result]:
    def read(path: str) -> str | None:
        f = th.file(path)
        return f.content_string if f.exists else None

    inst = plan.instance_of(host.name)
    graph = plan.nccl_graph and inst is not None and inst.direct
    return hardware.rdma_checks(host, read, exp.mode, graph)


def collective_backend(inst: Instance, head: Remote) -> str:
    """What the all-reduce runs over: Gloo where the engine's does (a CPU engine's recipe says
    `tp_backend: gloo`) or where rank 0 has no GPU (a lab Spark), else NCCL."""
    if inst.recipe is not None and inst.recipe.tp_backend == "gloo":
        return "gloo"
    return "nccl" if head.run("test -e /dev/nvidiactl").rc == 0 else "gloo"


def collective_command(plan: Plan, inst: Instance, rank: int, backend: str, sizes: str) -> str:
    """One rank of the all-reduce with the rendered env: inside the instance's image for the docker
    runtime (its torch and NCCL, started as the engine's container is), else the host's Python."""
    port = plan.master_port + 1  # admitted by the fabric firewall next to the engine's port
    args = (
        f"/etc/sparkfab/collective.py run --rank {rank} --world-size {len(inst.ranks)} "
        f"--master-addr {inst.master_addr} --master-port {port} --backend {backend} "
        f"--sizes {shlex.quote(sizes)} --timeout 90"
    )
    rec = inst.recipe
    if inst.runtime == "docker" and rec is not None:
        # the image's shell finds the interpreter on the PATH the env files give it (docker looks
        # an --entrypoint up before they apply), or the one SPARKFAB_PYTHON names
        options = " ".join(shlex.join(group) for group in container_options(rec, inst))
        inside = f'exec "${{SPARKFAB_PYTHON:-python3}}" {args}'
        return f"docker run --rm {options} --entrypoint sh {shlex.quote(rec.image)} -c {shlex.quote(inside)}"
    env = f"/etc/sparkfab/nccl.env /etc/sparkfab/launch/{inst.name}.env"
    return f'{export_env(env)}; exec "${{SPARKFAB_PYTHON:-python3}}" {args}'


def collective(
    plan: Plan, inst: Instance, hosts: dict[str, Remote], backend: str, sizes: str, log: Callable[[str], None]
) -> CollectiveResult:
    """The torch.distributed all-reduce with the generated env: workers first, rank 0 last."""
    import concurrent.futures as cf

    n = len(inst.ranks)

    def one(rank: int, host: str) -> dict[str, Any]:
        res = hosts[host].run(collective_command(plan, inst, rank, backend, sizes))
        lines = [x for x in res.stdout.splitlines() if x.startswith("{")]
        if res.rc == 0 and lines:
            parsed: dict[str, Any] = json.loads(lines[-1])
            return parsed
        last = [x for x in res.stderr.strip().splitlines() if x.strip()]
        return {"rank": rank, "error": last[-1][-200:] if last else f"exit {res.rc}"}

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=n) as pool:
        futures = {}
        for r in sorted(inst.ranks, key=lambda r: (r.rank == 0, r.rank)):
            futures[r.rank] = pool.submit(one, r.rank, r.host)
            time.sleep(0.05)
        results = {rank: f.result() for rank, f in futures.items()}
    log(f"collective on {inst.name}: {time.perf_counter() - t0:.1f} s")
    return CollectiveResult.from_ranks(inst.name, backend, results)
