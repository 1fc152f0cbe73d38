"""`sparkfab preflight`: read-only checks of what apply and serve will need, before apply
rewrites netplan.

Every host is reached the way verify and Ansible reach it (`sparkfab.connection`): the same
ssh settings, and root through `sudo -n` where the login is not root. Nothing is changed.
A failed check is a blocker (exit 4); a warning is something apply or serve will deal with or
a user should know. A lab's Sparks are checked as any (they present the hardware's facts).
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import shlex
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from sparkfab import connection, modelcheck
from sparkfab.connection import Connection
from sparkfab.facts import rdma
from sparkfab.facts.netdevs import DRIVERS, LINKS
from sparkfab.facts.remote import Remote
from sparkfab.paths import repo_dir
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render.launch import HF_CACHE, PID_DIR, Launch, launch, volumes
from sparkfab.verify import images, perf
from sparkfab.verify.result import FAIL, PASS, WARN, Report, Result, left_out

NETPLAN_DIRS = ("/etc/netplan", "/run/netplan", "/lib/netplan")


def _foreign_module() -> ModuleType:
    """The netplan module's own reader of other netplan files (one definition of "touches"), the
    collection's `module_utils/sparkfab_netplan_files.py`, loaded by its path."""
    path = repo_dir("playbooks") / "module_utils" / "sparkfab_netplan_files.py"
    spec = importlib.util.spec_from_file_location("sparkfab_netplan_files", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
            Result("ssh", host.name, "login", "reachable", "reachable", PASS),
            Result("sudo", host.name, "root", "root", "refused", FAIL, str(exc)),
        ]
    except Exception as exc:
        return [Result("ssh", host.name, "login", "reachable", "unreachable", FAIL, str(exc).splitlines()[0][:200])]
    reached[host.name] = th
    out = [Result("ssh", host.name, "login", "reachable", "reachable", PASS), _sudo(host, th)]
    out += _netdevs(host, th)
    out += _rdma(host, th)
    out += _netplan(host, th)
    out.append(_clock(host, th))
    out += _tools(plan, host, th)
    return out


#: what a Spark as shipped may lack, each with what supplies it and what needs it: (check,
#: probe, why); the probe runs as root, `command -v` on root's PATH
TOOLS = (
    (
        "lldpd",
        "command -v lldpcli >/dev/null && lldpcli show chassis >/dev/null",
        "lldpd is not running: `apt-get install lldpd` (apply installs it where lldpcli is missing; "
        "verify's cabling and discover read LLDP; apply sets its port ids to the netdevs' names)",
    ),
    (
        "perftest",
        "command -v ib_write_bw >/dev/null",
        "ib_write_bw is not installed: `apt-get install perftest` (verify --perf's per-rail bandwidth)",
    ),
)


def _tools(plan: Plan, host: Host, th: Remote) -> list[Result]:
    """The programs the fabric's checks and a fabric control plane need on a Spark, each missing
    one named with the command that supplies it (none is a blocker: apply installs lldpd and
    nftables with apt, and perftest serves only verify --perf)."""
    if not host.ifaces:
        return []
    probes = list(TOOLS)
    if plan.control_plane == "fabric":
        why = "nft is not installed: `apt-get install nftables`, or apply installs it (it loads the fabric's firewall)"
        probes.append(("nftables", "command -v nft >/dev/null", why))
    out = []
    for name, probe, why in probes:
        ok = th.run(probe).rc == 0
        out.append(
            Result(
                "tools",
                host.name,
                name,
                "installed",
                "installed" if ok else "absent",
                PASS if ok else WARN,
                "" if ok else why,
            )
        )
    return out


def _sudo(host: Host, th: Remote) -> Result:
    user = th.run("echo ${SUDO_USER:-root}").stdout.strip() or "root"
    how = "login is root" if user == "root" else f"{user} through {getattr(th, 'sparkfab_how', 'sudo -n')}"
    return Result("sudo", host.name, "root", "root", "root", PASS, how)


def _netdevs(host: Host, th: Remote) -> list[Result]:
    links = LINKS.of(th)
    out = []
    for name in host.fabric_ifs:
        link = links.get(name)
        if link is None:
            hint = "no such netdev: check the cable's port (p0/p1) in the inventory, and `ip link` on the host"
            out.append(Result("netdev", host.name, name, "present", "absent", FAIL, hint))
            continue
        state = link.operstate.lower()
        if "NO-CARRIER" in link.flags:
            out.append(Result("netdev", host.name, name, "present", "no carrier", WARN, "is the cable in?"))
        elif not link.up:
            out.append(Result("netdev", host.name, name, "present", "down", WARN, "apply brings it up"))
        else:
            out.append(Result("netdev", host.name, name, "present", f"present, {state}", PASS))
    return out


def _rdma(host: Host, th: Remote) -> list[Result]:
    devices = sorted(set(host.hca["200"]))
    out = []
    for dev in devices:
        res = th.run(f"cat {shlex.quote(rdma.port_dir(dev) + '/state')}")
        if res.rc != 0:
            out.append(Result("rdma", host.name, dev, "present", "absent", FAIL, "no such RDMA device (ibdev2netdev)"))
            continue
        state = res.stdout.strip()
        status = PASS if "ACTIVE" in state else WARN
        out.append(Result("rdma", host.name, dev, "ACTIVE", state, status, "" if status == PASS else "no link yet"))
    return out


def _netplan(host: Host, th: Remote) -> list[Result]:
    """Other netplan files that configure a fabric netdev: apply refuses them (or moves them
    aside with --take-over-netplan)."""
    import yaml

    mod = _foreign_module()
    listing = th.run(
        f"for f in $(ls {' '.join(d + '/*.yaml' for d in NETPLAN_DIRS)} 2>/dev/null); do "
        'printf "\\n@@sparkfab-file %s\\n" "$f"; cat "$f"; done'
    ).stdout
    facts = DRIVERS.of(th, list(host.fabric_ifs))
    found = []
    for chunk in listing.split("\n@@sparkfab-file ")[1:]:
        path, _, text = chunk.partition("\n")
        if path == "/etc/netplan/60-sparkfab.yaml":
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            found.append(Result("netplan", host.name, path, "readable", "not YAML", WARN, "netplan will refuse it"))
            continue
        devs = mod.touched(doc, list(host.fabric_ifs), facts)
        if devs:
            hint = f"configures {', '.join(devs)}: apply refuses it; --take-over-netplan moves it aside"
            found.append(Result("netplan", host.name, path, "no other file", "configures fabric netdevs", FAIL, hint))
    return found or [Result("netplan", host.name, "other files", "none on the fabric", "none", PASS)]


def _clock(host: Host, th: Remote) -> Result:
    res = th.run("timedatectl show -p NTPSynchronized --value")
    got = res.stdout.strip() or "unknown"
    status = PASS if got == "yes" else WARN
    return Result("clock", host.name, "NTP", "yes", got, status, "" if status == PASS else "traces and logs misalign")


# ----------------------------------------------------------------------------- per instance


def _instance(plan: Plan, inst: Instance, hosts: dict[str, Remote]) -> list[Result]:
    if inst.recipe is None:
        return []
    lxs = {h: launch(plan, inst, plan.host(h), inst.recipe) for h in inst.hosts}
    head = lxs[inst.hosts[0]]
    out = _ports(plan, inst, hosts[inst.hosts[0]], head)
    if head.runtime == "docker":
        out += [_docker(h, hosts[h]) for h in inst.hosts]
        image = inst.recipe.image
        out += images.same_image(inst, image, hosts)
        out.append(images.nccl_in_image(inst, image, hosts[inst.hosts[0]], inst.direct))
        out.append(_forward_policy(plan, inst, hosts))
    else:
        out += _program(inst, hosts, lxs)
    out += [_model(inst, h, hosts[h], head) for h in inst.hosts]
    return out + _mpi(plan, inst, hosts[inst.hosts[0]])


def _mpi(plan: Plan, inst: Instance, head: Remote) -> list[Result]:
    """What `verify --perf` needs for nccl-tests: mpirun on rank 0's login PATH, all_reduce_perf
    where the inventory's `perf_tools` says, and ssh from rank 0's login user to every other rank
    without a prompt (how mpirun starts them). Warnings: apply and serve do not need them."""
    if len(inst.hosts) < 2:
        return []
    if head.run(perf.as_login(perf.mpi_tools(plan))).rc != 0:
        why = (
            f"mpirun is not on the login user's PATH or all_reduce_perf is not in {plan.perf_tools.nccl_tests}"
            " (apt-get install openmpi-bin; nccl-tests built as NVIDIA's DGX Spark playbook does): verify --perf"
            " skips nccl-tests"
        )
        return [Result("mpi", inst.hosts[0], inst.name, "mpirun, all_reduce_perf", "absent", WARN, why)]
    answers = dict(
        line.split(" ", 1) for line in head.run(perf.peer_ssh_command(plan, inst)).stdout.splitlines() if " " in line
    )
    out = []
    for h in inst.hosts[1:]:
        addr = plan.host(h).mgmt_address
        got = answers.get(addr, "no answer")
        ok = got == "ok"
        why = "" if ok else f"mpirun starts ranks over ssh: give rank 0's login user a key and known host for {addr}"
        out.append(Result("mpi-ssh", inst.hosts[0], f"-> {h} {addr}", "ok", got[:80], PASS if ok else WARN, why))
    return out


def _ports(plan: Plan, inst: Instance, th: Remote, lx: Launch) -> list[Result]:
    """The API port and the rendezvous ports are free on rank 0 (or held by sparkfab's engine)."""
    ours = th.run(f"test -s {PID_DIR}/{inst.name}.pid").rc == 0
    out = []
    for port in (inst.port, plan.master_port, plan.master_port + 1):
        busy = th.run(f"ss -Htln 'sport = :{port}'").stdout.strip()
        if not busy:
            out.append(Result("port", inst.hosts[0], str(port), "free", "free", PASS))
        elif ours:
            out.append(Result("port", inst.hosts[0], str(port), "free", "in use", PASS, f"{inst.name} is serving"))
        else:
            out.append(Result("port", inst.hosts[0], str(port), "free", "in use", FAIL, "another program listens"))
    return out


def _docker(host: str, th: Remote) -> Result:
    """Docker with what `docker run --gpus all` needs: NVIDIA's hook (Docker's own GPU driver
    registers only when it finds it) or the toolkit's `nvidia` runtime."""
    res = th.run("docker info --format '{{json .Runtimes}}'")
    if res.rc != 0:
        return Result("docker", host, "GPU support", "present", "no docker", FAIL, res.stderr.strip()[:160])
    hook = th.run("command -v nvidia-container-runtime-hook").rc == 0
    ok = hook or "nvidia" in res.stdout
    detail = "" if ok else "install the NVIDIA Container Toolkit (nvidia-ctk runtime configure)"
    return Result("docker", host, "GPU support", "present", "present" if ok else "absent", PASS if ok else FAIL, detail)


def _forward_policy(plan: Plan, inst: Instance, hosts: dict[str, Remote]) -> Result:
    forwarding = [h for h in inst.hosts if plan.host(h).forwarding]
    if not forwarding:
        return Result("forward-policy", inst.hosts[0], inst.name, "-", "-", PASS, "no host forwards")
    drops = [h for h in forwarding if "-P FORWARD DROP" in hosts[h].run("iptables -w -S FORWARD").stdout]
    detail = f"DROP on {', '.join(drops)}: apply adds sparkfab's DOCKER-USER rules" if drops else ""
    return Result(
        "forward-policy",
        forwarding[0],
        inst.name,
        "ACCEPT",
        "DROP" if drops else "ACCEPT",
        WARN if drops else PASS,
        detail,
    )


def _program(inst: Instance, hosts: dict[str, Remote], lxs: dict[str, Launch]) -> list[Result]:
    """The process runtime's "image": the program the launch runs, the same file on every rank."""
    digests = {}
    for h in inst.hosts:
        env = dict(lxs[h].env)
        prog = lxs[h].argv[0]
        if prog == "python3" and env.get("SPARKFAB_PYTHON"):
            prog = env["SPARKFAB_PYTHON"]
        path = shlex.quote(env.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
        res = hosts[h].run(f'p=$(PATH={path} command -v {shlex.quote(prog)}) && sha256sum "$(readlink -f "$p")"')
        digests[h] = res.stdout.split()[0] if res.rc == 0 and res.stdout.strip() else "absent"
    want = digests[inst.hosts[0]]
    out = []
    for h, got in digests.items():
        status = FAIL if got == "absent" or got != want else PASS
        detail = f"`{lxs[h].argv[0]}` is not on the launch PATH" if got == "absent" else lxs[h].argv[0]
        if got not in ("absent", want):
            detail = f"{lxs[h].argv[0]} differs from rank 0's: another build"
        out.append(Result("image", h, inst.name, want[:19], got[:19], status, detail))
    return out


def _model(inst: Instance, host: str, th: Remote, lx: Launch) -> Result:
    model = inst.model or (inst.recipe.model if inst.recipe else "")
    if not model or inst.recipe is None:
        return Result.skip("model", host, inst.name, "the recipe names no model")
    if model.startswith("/"):
        # a process reads the path itself; a container reads it through the recipe's volumes
        where = modelcheck.host_path(model, volumes(inst.recipe, inst), lx.runtime)
        if where is None:
            return Result.skip("model", host, model, "a path inside the image (no volume mounts it)")
        ok = th.run(f"test -f {shlex.quote(str(where))}/config.json").rc == 0
        detail = "" if ok else f"{where} on the host (mounted at {model}) holds no checkpoint: copy it there"
        return Result("model", host, model, "present", "present" if ok else "absent", PASS if ok else FAIL, detail)
    cache = inst.hf_cache or HF_CACHE
    folder = f"{cache}/hub/models--{model.replace('/', '--')}/snapshots"
    ok = th.run(f'test -n "$(ls -A {shlex.quote(folder)} 2>/dev/null)"').rc == 0
    detail = "" if ok else f"not in {cache}: the engine downloads it at start (HF_TOKEN for gated models)"
    return Result("model", host, model, "cached", "cached" if ok else "absent", PASS if ok else WARN, detail)
