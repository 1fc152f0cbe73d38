"""`verify --perf` on hardware: ib_write_bw / ib_write_lat per rail, both twins of a port at
once (one PCIe root carries about 95-112 Gb/s, both about 180-196), and nccl-tests'
all_reduce_perf when it is installed."""

from __future__ import annotations

import concurrent.futures as cf
import shlex
import time

from sparkfab.facts.remote import Remote
from sparkfab.plan import Host, Iface, Instance, Plan
from sparkfab.render.control import PERFTEST_BASE, PERFTEST_COUNT
from sparkfab.render.launch import export_env
from sparkfab.spark import SPEEDS
from sparkfab.verify import hardware
from sparkfab.verify.catalog import Check
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
    """perftest on every rail (where it is installed), then nccl-tests across every instance."""
    first = next((h for h in plan.hosts if h.ifaces), None)
    if first is None:
        return []
    if hosts[first.name].run("command -v ib_write_bw").rc != 0:
        why = "ib_write_bw is not installed (perftest): no per-rail bandwidth"
        return [Result.skip(Check.IB_WRITE_BW, first.name, "perftest", why), *_all_reduce(plan, hosts)]
    return _rails(plan, hosts) + _all_reduce(plan, hosts)


def _rails(plan: Plan, hosts: dict[str, Remote]) -> list[Result]:
    out: list[Result] = []
    port = PERFTEST_BASE  # the ports the firewall admits from fabric subnets (render.control)
    for group in rail_pairs(plan):
        jobs = [(a, ai, b, bi, port + k % PERFTEST_COUNT) for k, (a, ai, b, bi) in enumerate(group)]
        with cf.ThreadPoolExecutor(max_workers=len(group)) as pool:
            runs = list(pool.map(lambda j: _bw(hosts, *j), jobs))
        total = 0.0
        marks = SPEEDS[plan.mode_of(group[0][0].name)]
        for (a, ai, b, bi), (note, gbps) in zip(group, runs, strict=True):
            total += gbps or 0.0
            out.append(
                Result(
                    check=Check.IB_WRITE_BW,
                    host=a.name,
                    subject=f"{ai.rdma} -> {b.name}:{bi.rdma}",
                    expected=f">= {marks.root_pass_gbps:.0f} Gb/s",
                    actual="-" if gbps is None else f"{gbps:.1f} Gb/s",
                    status=PASS if gbps and gbps >= marks.root_pass_gbps else FAIL,
                    detail="" if gbps else note,
                )
            )
        if len(group) == 2:
            a, ai = group[0][0], group[0][1]
            out.append(
                Result(
                    check=Check.PORT_BW,
                    host=a.name,
                    subject=f"{ai.port} (both twins)",
                    expected=f">= {marks.port_pass_gbps:.0f} Gb/s",
                    actual=f"{total:.1f} Gb/s",
                    status=PASS if total >= marks.port_pass_gbps else FAIL,
                )
            )
        a, ai, b, bi = group[0]
        lat = _lat(hosts, a, ai, b, bi, port + 10)
        out.append(
            Result(
                check=Check.IB_WRITE_LAT,
                host=a.name,
                subject=f"{ai.rdma} -> {b.name}",
                expected="typical < 5 us",
                actual=f"{lat.get('t_typical', 0):.2f} us" if lat else "-",
                status=PASS if lat and lat.get("t_typical", 99) < 5 else FAIL,
            )
        )
        port += 20
    return out


#: OpenMPI refuses to start as root unless told, and then only with both variables set
ROOT_OK = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
#: how mpirun starts the other ranks: over ssh to each management address, as the login user,
#: never asking (a missing key or unknown host key fails at once; preflight checks both)
RSH_AGENT = "ssh -o BatchMode=yes -o ConnectTimeout=10"


def as_login(command: str, root_env: str = "") -> str:
    """`command` (sh) as the user who logged in, in a login shell (their PATH, e.g. to a built
    nccl-tests) from their home: verify's commands run as root through `sudo -n`, so it goes
    back to $SUDO_USER; a root login runs it as root, with `root_env`."""
    back = shlex.quote("cd; " + command)
    as_root = shlex.quote(f"cd; {'export ' + root_env + '; ' if root_env else ''}{command}")
    return (
        'if [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then '
        f'exec sudo -n -H -u "$SUDO_USER" sh -lc {back}; else exec sh -lc {as_root}; fi'
    )


def tool_path(path: str) -> str:
    """A tool directory as a login shell writes it: `~/x` as "$HOME"/x (expanded by the shell
    that runs it, on that Spark), anything else quoted."""
    return f'"$HOME"/{shlex.quote(path[2:])}' if path.startswith("~/") else shlex.quote(path)


def binary(plan: Plan) -> str:
    """all_reduce_perf where the inventory says nccl-tests is built (NVIDIA's playbook: ~/nccl-tests/build)."""
    return tool_path(plan.perf_tools.nccl_tests.rstrip("/") + "/all_reduce_perf")


def nccl_lib(plan: Plan) -> str:
    """The library directory of the NCCL nccl-tests was built against (NVIDIA's playbook: ~/nccl/build/lib)."""
    return tool_path(plan.perf_tools.nccl.rstrip("/") + "/lib")


def all_reduce_command(plan: Plan, inst: Instance) -> str:
    """nccl-tests across the instance, as NVIDIA's Spark playbook runs it: mpirun as the login
    user (verify's commands run as root through sudo, so it goes back to $SUDO_USER; a root login
    gets OpenMPI's permission to run as root), the other ranks started over ssh to their
    management addresses, ranks in cable order, each with its own rendered /etc/sparkfab/nccl.env
    (read on that rank, literally), and MPI's own traffic (its TCP, and UCX where OpenMPI is
    built with it) on the management interface, off the fabric under test. The binary is the
    inventory's, by its absolute path (a rank started over ssh has no login PATH), and NCCL's
    library directory leads LD_LIBRARY_PATH, passed to every rank with `-x` (the playbook's way;
    the home directory is rank 0's, as the playbook assumes one layout on every Spark).
    MASTER_ADDR and MASTER_PORT (rank 0's control address) are for a stand-in of
    all_reduce_perf; nccl-tests does not read them."""
    hostlist = shlex.quote(",".join(f"{plan.host(h).mgmt_address}:1" for h in inst.hosts))
    rank_cmd = f'{export_env("/etc/sparkfab/nccl.env")}; exec "$0" -b 1M -e 256M -f 4 -d bfloat16'
    mgmt = plan.host(inst.hosts[0]).mgmt_if
    mpi = (
        f"LD_LIBRARY_PATH={nccl_lib(plan)}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} "
        f"UCX_NET_DEVICES={shlex.quote(mgmt)} MASTER_ADDR={inst.master_addr} MASTER_PORT={plan.master_port + 1} "
        f"mpirun -np {len(inst.hosts)} -H {hostlist} --mca plm_rsh_agent {shlex.quote(RSH_AGENT)} "
        f"--mca btl_tcp_if_include {shlex.quote(mgmt)} --mca oob_tcp_if_include {shlex.quote(mgmt)} "
        "-x LD_LIBRARY_PATH -x UCX_NET_DEVICES -x MASTER_ADDR -x MASTER_PORT "
        f"sh -c {shlex.quote(rank_cmd)} {binary(plan)}"
    )
    return as_login(mpi, ROOT_OK)


def _absolute(path: str, home: str) -> str:
    return home.rstrip("/") + path[1:] if path.startswith("~/") else path


def tools_command(binary_path: str, lib_dir: str) -> str:
    """On one Spark: `binary ok|missing` for the binary mpirun will start there, `nccl X.Y.Z|missing`
    from the NCCL library's file name (libnccl.so.2.X.Y) where LD_LIBRARY_PATH will lead."""
    b, lib = shlex.quote(binary_path), shlex.quote(lib_dir.rstrip("/") + "/libnccl.so.2")
    return (
        f'if [ -x {b} ]; then echo "binary ok"; else echo "binary missing"; fi; '
        f"l=$(readlink -f {lib} 2>/dev/null); "
        'case "$l" in *libnccl.so.2.*) echo "nccl ${l##*libnccl.so.}";; *) echo "nccl missing";; esac'
    )


def check_tools(plan: Plan, inst: Instance, hosts: dict[str, Remote]) -> list[Result]:
    """nccl-tests and its NCCL on every rank of an instance, where mpirun will look: the binary
    and library directory of the inventory's `perf_tools`, `~/` being rank 0's login's home (the
    path mpirun passes on, as NVIDIA's playbook assumes one layout on every Spark); one NCCL
    version on all ranks."""
    home = hosts[inst.hosts[0]].run(as_login('printf "%s" "$HOME"')).stdout.strip() or "~"
    where = _absolute(plan.perf_tools.nccl_tests.rstrip("/") + "/all_reduce_perf", home)
    lib = _absolute(plan.perf_tools.nccl.rstrip("/") + "/lib", home)

    def one(h: str) -> tuple[str, str, str]:
        out = hosts[h].run(tools_command(where, lib)).stdout.split("\n")
        found = dict(line.split(" ", 1) for line in out if " " in line)
        return h, found.get("binary", "missing"), found.get("nccl", "missing")

    with cf.ThreadPoolExecutor(max_workers=len(inst.hosts)) as pool:
        seen = list(pool.map(one, inst.hosts))
    versions = {v for _, _, v in seen if v != "missing"}
    rows = []
    for h, b, v in seen:
        if b != "ok":
            why = (
                f"no all_reduce_perf at {where} (mpirun starts it there on every rank): build nccl-tests there as "
                "NVIDIA's DGX Spark playbook does, or set perf_tools.nccl_tests to where it is"
            )
            rows.append(
                Result(
                    check=Check.NCCL_TESTS,
                    host=h,
                    subject=inst.name,
                    expected=where,
                    actual="absent",
                    status=FAIL,
                    detail=why,
                )
            )
        elif v == "missing":
            why = f"no libnccl.so.2 in {lib}: set perf_tools.nccl to the NCCL nccl-tests was built with"
            rows.append(
                Result(
                    check=Check.NCCL_TESTS,
                    host=h,
                    subject=inst.name,
                    expected=f"{lib}/libnccl.so.2",
                    actual="absent",
                    status=FAIL,
                    detail=why,
                )
            )
        else:
            same = len(versions) == 1
            why = "" if same else f"the ranks load different NCCL versions: {', '.join(sorted(versions))}"
            rows.append(
                Result(
                    check=Check.NCCL_TESTS,
                    host=h,
                    subject=inst.name,
                    expected="one NCCL on every rank",
                    actual=f"NCCL {v}",
                    status=PASS if same else FAIL,
                    detail=why,
                )
            )
    return rows


def peer_ssh_command(plan: Plan, inst: Instance) -> str:
    """What mpirun needs before it starts: rank 0's login user reaches every other rank's
    management address over ssh without a prompt. Prints `<address> ok|<error>` per peer."""
    peers = " ".join(shlex.quote(plan.host(h).mgmt_address) for h in inst.hosts[1:])
    probe = (
        f'for a in {peers}; do if out=$({RSH_AGENT} "$a" true 2>&1); then echo "$a ok"; '
        'else echo "$a $(echo $out | tail -c 160)"; fi; done'
    )
    return as_login(probe)


def mpi_tools(plan: Plan) -> str:
    """What `verify --perf` needs on rank 0: mpirun on the login user's PATH, and all_reduce_perf
    where the inventory says nccl-tests is built."""
    return f"command -v mpirun && [ -x {binary(plan)} ]"


def all_reduce(plan: Plan, inst: Instance, hosts: dict[str, Remote], want: float) -> list[Result]:
    """nccl-tests' all_reduce_perf across one instance, judged by the mode's bus-bandwidth mark,
    after its binary and NCCL are checked on every rank."""
    head = hosts[inst.hosts[0]]
    if head.run(as_login(mpi_tools(plan))).rc != 0:
        why = f"mpirun or {plan.perf_tools.nccl_tests}/all_reduce_perf not installed on {inst.hosts[0]}"
        return [Result.skip(Check.ALL_REDUCE_PERF, inst.hosts[0], inst.name, why)]
    tools = check_tools(plan, inst, hosts)
    if any(r.status == FAIL for r in tools):
        return tools
    return [*tools, _run_all_reduce(plan, inst, head, want)]


def _run_all_reduce(plan: Plan, inst: Instance, head: Remote, want: float) -> Result:
    res = head.run(all_reduce_command(plan, inst))
    rows, avg = hardware.parse_nccl_tests(res.stdout)
    best = max((r.busbw for r in rows), default=0.0) * 8
    why = "" if rows else ((res.stderr or res.stdout).strip().splitlines() or [f"exit {res.rc}"])[-1][-200:]
    return Result(
        check=Check.ALL_REDUCE_PERF,
        host=inst.hosts[0],
        subject=inst.name,
        expected=f"busbw >= {want:g} Gb/s",
        actual=f"{best:.0f} Gb/s (avg {avg} GB/s)",
        status=PASS if best >= want else FAIL,
        detail=why,
    )


def busbw_mark(plan: Plan, inst: Instance) -> float:
    """all_reduce_perf's pass mark: the inventory's `perf_tools.busbw_min_gbps`, else the mode's."""
    return plan.perf_tools.busbw_min_gbps or SPEEDS[plan.mode_of(inst.hosts[0])].busbw_pass_gbps


def _all_reduce(plan: Plan, hosts: dict[str, Remote]) -> list[Result]:
    return [
        row
        for inst in plan.instances
        if len(inst.hosts) > 1
        for row in all_reduce(plan, inst, hosts, busbw_mark(plan, inst))
    ]
