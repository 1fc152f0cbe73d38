"""preflight's checks of one instance across its Sparks: the ports it serves on, Docker with GPU
support, one image, the forward policy between ranks, the program and the model it runs, and
MPI for verify --perf."""

from __future__ import annotations

import shlex

from sparkfab import modelcheck
from sparkfab.facts.remote import Remote
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import HF_CACHE, PID_DIR, Launch, volumes
from sparkfab.verify import perf
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, WARN, Result


def mpi(plan: Plan, inst: Instance, head: Remote) -> list[Result]:
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
        return [
            Result(
                check=Check.MPI,
                host=inst.hosts[0],
                subject=inst.name,
                expected="mpirun, all_reduce_perf",
                actual="absent",
                status=WARN,
                detail=why,
            )
        ]
    answers = dict(
        line.split(" ", 1) for line in head.run(perf.peer_ssh_command(plan, inst)).stdout.splitlines() if " " in line
    )
    out = []
    for h in inst.hosts[1:]:
        addr = plan.host(h).mgmt_address
        got = answers.get(addr, "no answer")
        ok = got == "ok"
        why = "" if ok else f"mpirun starts ranks over ssh: give rank 0's login user a key and known host for {addr}"
        out.append(
            Result(
                check=Check.MPI_SSH,
                host=inst.hosts[0],
                subject=f"-> {h} {addr}",
                expected="ok",
                actual=got[:80],
                status=PASS if ok else WARN,
                detail=why,
            )
        )
    return out


def ports(plan: Plan, inst: Instance, th: Remote, lx: Launch) -> list[Result]:
    """The API port and the rendezvous ports are free on rank 0 (or held by sparkfab's engine)."""
    ours = th.run(f"test -s {PID_DIR}/{inst.name}.pid").rc == 0
    out = []
    for port in (inst.port, plan.master_port, plan.master_port + 1):
        busy = th.run(f"ss -Htln 'sport = :{port}'").stdout.strip()
        if not busy:
            out.append(
                Result(
                    check=Check.PORT, host=inst.hosts[0], subject=str(port), expected="free", actual="free", status=PASS
                )
            )
        elif ours:
            out.append(
                Result(
                    check=Check.PORT,
                    host=inst.hosts[0],
                    subject=str(port),
                    expected="free",
                    actual="in use",
                    status=PASS,
                    detail=f"{inst.name} is serving",
                )
            )
        else:
            out.append(
                Result(
                    check=Check.PORT,
                    host=inst.hosts[0],
                    subject=str(port),
                    expected="free",
                    actual="in use",
                    status=FAIL,
                    detail="another program listens",
                )
            )
    return out


def docker(host: str, th: Remote) -> Result:
    """Docker with what `docker run --gpus all` needs: NVIDIA's hook (Docker's own GPU driver
    registers only when it finds it) or the toolkit's `nvidia` runtime."""
    res = th.run("docker info --format '{{json .Runtimes}}'")
    if res.rc != 0:
        return Result(
            check=Check.DOCKER,
            host=host,
            subject="GPU support",
            expected="present",
            actual="no docker",
            status=FAIL,
            detail=res.stderr.strip()[:160],
        )
    hook = th.run("command -v nvidia-container-runtime-hook").rc == 0
    ok = hook or "nvidia" in res.stdout
    detail = "" if ok else "install the NVIDIA Container Toolkit (nvidia-ctk runtime configure)"
    return Result(
        check=Check.DOCKER,
        host=host,
        subject="GPU support",
        expected="present",
        actual="present" if ok else "absent",
        status=PASS if ok else FAIL,
        detail=detail,
    )


def forward_policy(plan: Plan, inst: Instance, hosts: dict[str, Remote]) -> Result:
    forwarding = [h for h in inst.hosts if plan.host(h).forwarding]
    if not forwarding:
        return Result(
            check=Check.FORWARD_POLICY,
            host=inst.hosts[0],
            subject=inst.name,
            expected="-",
            actual="-",
            status=PASS,
            detail="no host forwards",
        )
    drops = [h for h in forwarding if "-P FORWARD DROP" in hosts[h].run("iptables -w -S FORWARD").stdout]
    detail = f"DROP on {', '.join(drops)}: apply adds sparkfab's DOCKER-USER rules" if drops else ""
    return Result(
        check=Check.FORWARD_POLICY,
        host=forwarding[0],
        subject=inst.name,
        expected="ACCEPT",
        actual="DROP" if drops else "ACCEPT",
        status=WARN if drops else PASS,
        detail=detail,
    )


def program(inst: Instance, hosts: dict[str, Remote], lxs: dict[str, Launch]) -> list[Result]:
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
        out.append(
            Result(
                check=Check.IMAGE,
                host=h,
                subject=inst.name,
                expected=want[:19],
                actual=got[:19],
                status=status,
                detail=detail,
            )
        )
    return out


def model(inst: Instance, host: str, th: Remote, lx: Launch) -> Result:
    model = inst.model or (inst.recipe.model if inst.recipe else "")
    if not model or inst.recipe is None:
        return Result.skip(Check.MODEL, host, inst.name, "the recipe names no model")
    if model.startswith("/"):
        # a process reads the path itself; a container reads it through the recipe's volumes
        where = modelcheck.host_path(model, volumes(inst.recipe, inst), lx.runtime)
        if where is None:
            return Result.skip(Check.MODEL, host, model, "a path inside the image (no volume mounts it)")
        ok = th.run(f"test -f {shlex.quote(str(where))}/config.json").rc == 0
        detail = "" if ok else f"{where} on the host (mounted at {model}) holds no checkpoint: copy it there"
        return Result(
            check=Check.MODEL,
            host=host,
            subject=model,
            expected="present",
            actual="present" if ok else "absent",
            status=PASS if ok else FAIL,
            detail=detail,
        )
    cache = inst.hf_cache or HF_CACHE
    folder = f"{cache}/hub/models--{model.replace('/', '--')}/snapshots"
    ok = th.run(f'test -n "$(ls -A {shlex.quote(folder)} 2>/dev/null)"').rc == 0
    detail = "" if ok else f"not in {cache}: the engine downloads it at start (HF_TOKEN for gated models)"
    return Result(
        check=Check.MODEL,
        host=host,
        subject=model,
        expected="cached",
        actual="cached" if ok else "absent",
        status=PASS if ok else WARN,
        detail=detail,
    )
