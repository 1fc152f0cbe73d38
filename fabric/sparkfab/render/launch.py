"""Per-rank launch: an env file, an argv, a start order and the engine-flag hash.

Workers start first and rank 0 last, then a health wait on rank 0. The engine-shaping
flags must be identical on every rank (a mismatch hangs start-up with no error): their
hash is written per host so that verify can compare ranks.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass

from sparkfab.engines import RankArgs
from sparkfab.engines.recipes import SECRETS_FILE, Recipe
from sparkfab.errors import RenderError
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render import File
from sparkfab.render.text import fill

LAUNCH_DIR = "/etc/sparkfab/launch"
#: where a process-runtime engine's pid is kept: /run is a tmpfs, so a pid never outlives the boot
#: it belongs to (on disk, after a reboot, it would name whatever process got that number)
PID_DIR = "/run/sparkfab"
HF_CACHE = "/root/.cache/huggingface"


@dataclass(frozen=True)
class Launch:
    instance: str
    rank: int
    world: int
    start_order: int  # the wave it starts in: 0 first, 1 once the first wave has started
    runtime: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    engine_flags: tuple[str, ...]
    health_url: str | None
    secrets: tuple[str, ...] = ()
    health_wait_s: int = 0  # how long serve waits for rank 0's health (the engine's own timeout and more)
    warm_url: str | None = None  # rank 0's API, which serve warms with one completion (None: not warmed)
    warm_key_env: str | None = None  # the secrets file's variable with the API key the warm-up sends

    @property
    def start_first(self) -> bool:
        return self.start_order == 0

    @property
    def engine_hash(self) -> str:
        return hashlib.sha256("\0".join(self.engine_flags).encode()).hexdigest()


@dataclass(frozen=True)
class Endpoint:
    """Where a rank's tensor-parallel traffic leaves it when Gloo carries it: a netdev and its address."""

    netdev: str
    ip: str


def gloo_endpoints(plan: Plan, inst: Instance) -> dict[str, Endpoint]:
    """Per host of `inst`, the netdev and address its Gloo all-reduces use, all mutually reachable.

    Over a fabric control plane: the control address (routed around the ring). Otherwise one rail
    that every rank is on (a pair's cable, a switch's rail), on PCIe root 0 so that the emulated
    100 Gb/s mode (root 0 only) keeps it. A ring of three or more with a management control
    plane has no such rail (validation refuses that combination)."""
    if plan.control_plane == "fabric":
        return {h: Endpoint(plan.host(h).control_if, plan.host(h).control_address) for h in inst.hosts}
    wanted = set(inst.hosts)
    rails = sorted(plan.rails, key=lambda r: r.root)  # stable: root 0 first, then plan order
    for rail in rails:
        members = dict(rail.members)
        if wanted <= set(members):
            return {h: Endpoint(members[h], plan.host(h).iface(members[h]).ip) for h in inst.hosts}
    raise RenderError(
        f"instance {inst.name}: no rail reaches all {len(wanted)} ranks, so Gloo has no common subnet "
        "(set control_plane: fabric)"
    )


def export_env(paths: str) -> str:
    """Shell that exports every KEY=VALUE line of env files literally, as `docker --env-file`
    reads them: the value is never expanded, so `$(...)`, quotes or `;` in it stay text."""
    return (
        f"for f in {paths}; do "
        'while IFS= read -r line || [ -n "$line" ]; do '
        'case "$line" in ""|"#"*) continue ;; esac; export "$line"; '
        'done < "$f"; done'
    )


def launch(plan: Plan, inst: Instance, host: Host, recipe: Recipe) -> Launch:
    rank = next(r for r in inst.ranks if r.host == host.name)
    n = len(inst.ranks)
    spec = recipe.engine_spec
    runtime = inst.runtime or recipe.default_runtime
    backend = inst.backend or recipe.backend
    master = inst.master_addr
    if recipe.tp_backend == "gloo":
        master = gloo_endpoints(plan, inst)[inst.ranks[0].host].ip
    argv = spec.argv(
        RankArgs(
            model=inst.model or recipe.model,
            flags={**recipe.flags, **inst.flags},
            tp=inst.tp,
            nnodes=n,
            rank=rank.rank,
            backend=backend,
            dist_addr=master,
            dist_port=plan.master_port,
            http_addr=inst.master_addr,
            port=inst.port,
        )
    )
    env = _env(plan, inst, host, recipe, backend)
    api = f"http://{inst.master_addr}:{inst.port}"
    health = f"{api}{spec.health_path}" if rank.rank == 0 else None
    secrets = tuple(dict.fromkeys((*spec.secrets, *inst.secrets)))
    return Launch(
        inst.name,
        rank.rank,
        n,
        spec.start_order(rank.rank, n, backend),
        runtime,
        tuple(argv),
        tuple(env),
        spec.engine_flags(argv),
        health,
        secrets,
        recipe.health_wait,
        api if rank.rank == 0 and spec.warms else None,
        spec.api_key_env if rank.rank == 0 and spec.warms else None,
    )


def secret_names(plan: Plan) -> list[str]:
    """Every secret some engine of the plan takes from its host's secrets file."""
    names: dict[str, None] = {}
    for inst in plan.instances:
        if inst.recipe is not None:
            names.update(dict.fromkeys(launch(plan, inst, plan.host(inst.hosts[0]), inst.recipe).secrets))
    return list(names)


def _env(plan: Plan, inst: Instance, host: Host, recipe: Recipe, backend: str) -> list[tuple[str, str]]:
    host_ip = recipe.engine_spec.host_ip_env
    env = {
        "MASTER_ADDR": inst.master_addr,
        "MASTER_PORT": str(plan.master_port),
        "TP_SOCKET_IFNAME": host.control_if,
        **({host_ip: host.control_address} if host_ip else {}),
        **({"GLOO_SOCKET_IFNAME": host.control_if} if recipe.engine_spec.gloo_coordination else {}),
    }
    if recipe.tp_backend == "gloo":
        ends = gloo_endpoints(plan, inst)
        here = ends[host.name]
        env.update(
            {
                "GLOO_SOCKET_IFNAME": here.netdev,
                "TP_SOCKET_IFNAME": here.netdev,
                "MASTER_ADDR": ends[inst.ranks[0].host].ip,
                **({host_ip: here.ip} if host_ip else {}),
            }
        )
    if backend == "ray":
        env.update(
            {
                "RAY_memory_monitor_refresh_ms": "0",
                "RAY_NODE_IP_ADDRESS": host.control_address,
                "RAY_OVERRIDE_NODE_IP_ADDRESS": host.control_address,
            }
        )
    env.update(recipe.env)
    env.update(inst.env)
    return sorted(env.items())


def ray_commands(plan: Plan, inst: Instance, host: Host, serve: list[str], wait_s: int) -> list[str]:
    """The container command with Ray: rank 0 starts the head then serves; others join. A worker
    waits (up to `wait_s`) for the head's port before it joins: `ray start` gives up on a head
    that is not there yet after a few seconds and would leave its container dead for good."""
    port = str(plan.master_port)
    if host.name == inst.ranks[0].host:
        head = [
            "ray",
            "start",
            "--head",
            "--port",
            port,
            "--node-ip-address",
            host.control_address,
            "--disable-usage-stats",
        ]
        return ["bash", "-c", f"{shlex.join(head)} && exec {shlex.join(serve)}"]
    join = [
        "ray",
        "start",
        "--block",
        "--address",
        f"{inst.master_addr}:{port}",
        "--node-ip-address",
        host.control_address,
        "--disable-usage-stats",
    ]
    wait = (
        f"for _ in $(seq {max(1, wait_s // 2)}); do (exec 3<>/dev/tcp/{inst.master_addr}/{port}) 2>/dev/null "
        f"&& exec {shlex.join(join)}; sleep 2; done; "
        f"echo 'no Ray head answered at {inst.master_addr}:{port} within {wait_s} s' >&2; exit 1"
    )
    return ["bash", "-c", wait]


def files(plan: Plan, inst: Instance, host: Host, recipe: Recipe) -> list[File]:
    lx = launch(plan, inst, host, recipe)
    base = f"{LAUNCH_DIR}/{inst.name}"
    env_text = f"# sparkfab: launch env of {inst.name} rank {lx.rank} on {host.name} (generated)\n"
    env_text += "".join(f"{k}={v}\n" for k, v in lx.env)
    backend = inst.backend or recipe.backend
    command = list(lx.argv)
    if recipe.engine_spec.ray and backend == "ray":
        command = ray_commands(plan, inst, host, command, lx.health_wait_s)
    meta = {
        "instance": inst.name,
        "rank": lx.rank,
        "world_size": lx.world,
        "start_order": lx.start_order,
        "runtime": lx.runtime,
        "engine": recipe.engine,
        "image": recipe.image if lx.runtime == "docker" else None,
        "secrets": list(lx.secrets),
        "argv": command,  # what the engine process executes (in the container: entrypoint + command)
        "engine_flags": list(lx.engine_flags),
        "engine_flag_hash": lx.engine_hash,
        "health_url": lx.health_url,
        "container": f"sparkfab-{inst.name}",
    }
    return [
        File(f"{base}.env", env_text),
        File(f"{base}.sh", _script(plan, inst, host, recipe, lx, command), 0o755),
        File(f"{base}.json", json.dumps(meta, indent=2) + "\n"),
    ]


def container_command(recipe: Recipe, command: list[str]) -> tuple[list[str], list[str]]:
    """(docker run options, arguments after the image) so that the container executes exactly
    `command`: the image's own entrypoint is used when the command starts with it, replaced
    with `--entrypoint` when it does not."""
    ep = list(recipe.entrypoint)
    if ep and command[: len(ep)] == ep:
        return [], command[len(ep) :]
    if ep:
        return ["--entrypoint", command[0]], command[1:]
    return [], command


def volumes(recipe: Recipe, inst: Instance) -> list[str]:
    vols = list(recipe.volumes)
    if inst.hf_cache:
        vols = [v for v in vols if v.split(":")[1:2] != [HF_CACHE]] + [f"{inst.hf_cache}:{HF_CACHE}"]
    return vols


def container_options(recipe: Recipe, inst: Instance) -> list[list[str]]:
    """`docker run`'s options that make a container a Spark's engine, one group a line: host
    network and IPC, the GPU and the RDMA devices, unlimited memlock, the env files and
    /etc/sparkfab at the same path (NCCL_GRAPH_FILE and the env files name paths under it), the
    recipe's volumes. The launch script and `verify --collective` use the same."""
    return [
        ["--network", "host", "--ipc", "host", "--gpus", "all"],
        ["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK"],
        ["--ulimit", "memlock=-1", "--ulimit", "stack=67108864", "--shm-size", recipe.shm_size],
        ["--env-file", "/etc/sparkfab/nccl.env", "--env-file", f"{LAUNCH_DIR}/{inst.name}.env"],
        ["-v", "/etc/sparkfab:/etc/sparkfab:ro"],
        [x for v in volumes(recipe, inst) for x in ("-v", v)],
    ]


def _script(plan: Plan, inst: Instance, host: Host, recipe: Recipe, lx: Launch, command: list[str]) -> str:
    envs = f"/etc/sparkfab/nccl.env {LAUNCH_DIR}/{inst.name}.env"
    options, args = container_command(recipe, command)
    lines = [shlex.join(group) for group in container_options(recipe, inst)]
    # secrets: root-only, never rendered; values reach the engine by name, not on a command line
    lines[3] += "".join(f" -e {n}" for n in lx.secrets)
    return fill(
        "launch.sh.j2",
        instance=inst.name,
        rank=lx.rank,
        world=lx.world,
        host=host.name,
        start_order=lx.start_order,
        secrets=bool(lx.secrets),
        secrets_path=SECRETS_FILE,
        export_secrets=export_env(SECRETS_FILE),
        runtime=lx.runtime,
        export_env=export_env(envs),
        command=shlex.join(command).replace("python3", "${SPARKFAB_PYTHON:-python3}", 1),
        container=f"sparkfab-{inst.name}",
        options=lines,
        image=shlex.join([*options, recipe.image]),
        args=shlex.join(args),
    )
