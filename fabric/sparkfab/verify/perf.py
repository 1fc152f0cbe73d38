"""`verify --perf` on hardware: ib_write_bw / ib_write_lat per rail, both twins of a port at
once (one PCIe root carries about 95-112 Gb/s, both about 180-196), and nccl-tests'
all_reduce_perf when it is installed."""

from __future__ import annotations

import concurrent.futures as cf
import shlex
import time

from sparkfab.plan import Host, Iface, Instance, Plan
from sparkfab.render.launch import export_env
from sparkfab.verify import hardware
from sparkfab.verify.remote import Remote
from sparkfab.verify.result import FAIL, PASS, Result

BW_SECONDS = 5


def rail_pairs(plan: Plan) -> list[list[tuple[Host, Iface, Host, Iface]]]:
    """Per cabled port: its twins with the far end (direct) or the next rank (switch)."""
    groups: dict[tuple[str, str, str], list[tuple[Host, Iface, Host, Iface]]] = {}
    for h in plan.hosts:
        inst = plan.instance_of(h.name)
        for i in h.ifaces:
            if i.peer_host:
                if (i.peer_host, h.name) < (h.name, i.peer_host) and not i.switch:
                    continue  # each cable once
                peer = plan.host(i.peer_host)
                mate = next(x for x in peer.ifaces if x.netdev == i.peer_netdev and x.cable == i.cable)
            elif inst is not None and len(inst.hosts) > 1:
                peer = plan.host(inst.hosts[(inst.hosts.index(h.name) + 1) % len(inst.hosts)])
                mate = next(x for x in peer.ifaces if x.rail == i.rail)
            else:
                continue
            groups.setdefault((h.name, i.port, peer.name), []).append((h, i, peer, mate))
    return list(groups.values())


def _gid(th: Remote, device: str, address: str) -> int | None:
    def read(path: str) -> str | None:
        f = th.file(path)
        return f.content_string if f.exists else None

    return hardware.roce_v2_gid_index(read, device, address)


def _bw(hosts: dict[str, Remote], a: Host, ai: Iface, b: Host, bi: Iface, port: int) -> tuple[str, float | None]:
    ga, gb = _gid(hosts[a.name], ai.rdma, ai.ip), _gid(hosts[b.name], bi.rdma, bi.ip)
    if ga is None or gb is None:
        return "no RoCE v2 GID", None
    opts = f"--report_gbits -D {BW_SECONDS} -F -q 2 -s 1048576 -p {port}"
    hosts[b.name].run(f"(timeout {BW_SECONDS + 20} ib_write_bw -d {bi.rdma} -x {gb} {opts} >/dev/null 2>&1 &)")
    time.sleep(1.0)
    res = hosts[a.name].run(f"timeout {BW_SECONDS + 20} ib_write_bw -d {ai.rdma} -x {ga} {opts} {bi.ip}")
    rows = hardware.parse_ib_write_bw(res.stdout)
    return ("ok", rows[-1].avg_gbps) if rows else ((res.stderr or res.stdout)[-160:], None)


def _lat(hosts: dict[str, Remote], a: Host, ai: Iface, b: Host, bi: Iface, port: int) -> dict[str, float]:
    ga, gb = _gid(hosts[a.name], ai.rdma, ai.ip), _gid(hosts[b.name], bi.rdma, bi.ip)
    if ga is None or gb is None:
        return {}
    opts = f"-F -s 8 -n 2000 -p {port}"
    hosts[b.name].run(f"(timeout 30 ib_write_lat -d {bi.rdma} -x {gb} {opts} >/dev/null 2>&1 &)")
    time.sleep(1.0)
    return hardware.parse_ib_write_lat(
        hosts[a.name].run(f"timeout 30 ib_write_lat -d {ai.rdma} -x {ga} {opts} {bi.ip}").stdout
    )


def perf(plan: Plan, hosts: dict[str, Remote]) -> list[Result]:
    out: list[Result] = []
    port = 18515
    for group in rail_pairs(plan):
        jobs = [(a, ai, b, bi, port + k) for k, (a, ai, b, bi) in enumerate(group)]
        with cf.ThreadPoolExecutor(max_workers=len(group)) as pool:
            runs = list(pool.map(lambda j: _bw(hosts, *j), jobs))
        total = 0.0
        for (a, ai, b, bi), (note, gbps) in zip(group, runs, strict=True):
            total += gbps or 0.0
            out.append(
                Result(
                    "ib_write_bw",
                    a.name,
                    f"{ai.rdma} -> {b.name}:{bi.rdma}",
                    f">= {hardware.ROOT_PASS_GBPS:.0f} Gb/s",
                    "-" if gbps is None else f"{gbps:.1f} Gb/s",
                    PASS if gbps and gbps >= hardware.ROOT_PASS_GBPS else FAIL,
                    "" if gbps else note,
                )
            )
        if len(group) == 2:
            a, ai = group[0][0], group[0][1]
            out.append(
                Result(
                    "port-bw",
                    a.name,
                    f"{ai.port} (both twins)",
                    f">= {hardware.PORT_PASS_GBPS:.0f} Gb/s",
                    f"{total:.1f} Gb/s",
                    PASS if total >= hardware.PORT_PASS_GBPS else FAIL,
                )
            )
        a, ai, b, bi = group[0]
        lat = _lat(hosts, a, ai, b, bi, port + 10)
        out.append(
            Result(
                "ib_write_lat",
                a.name,
                f"{ai.rdma} -> {b.name}",
                "typical < 5 us",
                f"{lat.get('t_typical', 0):.2f} us" if lat else "-",
                PASS if lat and lat.get("t_typical", 99) < 5 else FAIL,
            )
        )
        port += 20
    out += _all_reduce(plan, hosts)
    return out


def all_reduce_command(plan: Plan, inst: Instance) -> str:
    """nccl-tests across the instance, ranks in cable order, each rank with its own rendered
    /etc/sparkfab/nccl.env (read on that rank, literally), MPI's own TCP on the management
    interface so that it stays off the fabric under test."""
    hostlist = ",".join(f"{plan.host(h).mgmt_address}:1" for h in inst.hosts)
    rank_cmd = f"{export_env('/etc/sparkfab/nccl.env')}; exec all_reduce_perf -b 1M -e 256M -f 4 -d bfloat16"
    mgmt = plan.host(inst.hosts[0]).mgmt_if
    return (
        f"mpirun -np {len(inst.hosts)} -H {hostlist} --mca btl_tcp_if_include {mgmt} "
        f"--mca oob_tcp_if_include {mgmt} sh -c {shlex.quote(rank_cmd)}"
    )


def _all_reduce(plan: Plan, hosts: dict[str, Remote]) -> list[Result]:
    first = plan.hosts[0].name
    if hosts[first].run("command -v all_reduce_perf && command -v mpirun").rc != 0:
        return [Result.skip("all_reduce_perf", first, "nccl-tests", "all_reduce_perf or mpirun not installed")]
    out = []
    for inst in plan.instances:
        res = hosts[inst.hosts[0]].run(all_reduce_command(plan, inst))
        rows, avg = hardware.parse_nccl_tests(res.stdout)
        best = max((r.busbw for r in rows), default=0.0) * 8
        want = hardware.PORT_PASS_GBPS if plan.mode_of(inst.hosts[0]) != "100e" else hardware.ROOT_PASS_GBPS
        out.append(
            Result(
                "all_reduce_perf",
                inst.hosts[0],
                inst.name,
                f"busbw >= {want:.0f} Gb/s",
                f"{best:.0f} Gb/s (avg {avg} GB/s)",
                PASS if best >= want else FAIL,
            )
        )
    return out
