"""Bring a lab up, take it down, say what it is: the whole lifecycle over `links`, `keys`,
`machine`, `daemons` and `serving` (one module per concern). `down` works from names and pids
alone, so it also cleans up after a crash half-way through `up`.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sparkfab import spark
from sparkfab.errors import LabError
from sparkfab.lab import boot, cgroups, daemons, enginecache, image, keys, links, machine, serving, wire
from sparkfab.lab.links import existing_namespaces
from sparkfab.lab.serving import LabEngine
from sparkfab.lab.spec import LabSpec, lab_id, ns_prefix
from sparkfab.lab.state import LabState, is_up
from sparkfab.paths import LabPaths, lab_dir, lab_inventory_file
from sparkfab.spark import LinkSpeed


def up(
    spec: LabSpec, inventory: str, engine: LabEngine, mode: LinkSpeed, tps: set[int], keep_ray: bool = False
) -> LabState:
    """Everything a lab is, in order: the image (built once), namespaces and cables, keys, the
    engine's files, the machines booted, the switches' lldpd, the container image in every
    Spark's Docker, the cables shaped to `mode`'s rate; then its state, written once (with
    `keep_ray`: whether instances planned on Ray keep it)."""
    if existing_namespaces(spec.cluster):
        raise LabError(
            f"lab {spec.cluster} is already up (namespaces {ns_prefix(spec.cluster)}*): run `sparkfab lab down` first"
        )
    check_inotify(len(machine.machines(spec)))
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    root = image.machine_root(spec.shipped)
    t["image_s"] = time.perf_counter() - t0
    spec.dir.mkdir(parents=True, exist_ok=True)
    try:
        state = _build(spec, inventory, engine, mode, tps, root, t)
    except BaseException:
        down(spec.cluster)
        raise
    t["total_s"] = time.perf_counter() - t0
    timing = {k: round(v, 3) for k, v in t.items()}
    state = replace(state, timing=timing, keep_ray=keep_ray)
    state.write()
    return state


def _build(
    spec: LabSpec, inventory: str, engine: LabEngine, mode: LinkSpeed, tps: set[int], root: Path, t: dict[str, float]
) -> LabState:
    t0 = time.perf_counter()
    links.namespaces(spec)
    links.mgmt(spec)
    links.fabric(spec)
    t["links_s"] = time.perf_counter() - t0
    keys.make(spec)
    extra = serving.install(spec, engine, tps)
    fill = enginecache.start(spec, engine)  # beside the boots: what every rank's first start would do
    try:
        line = spark.SPEEDS[mode].line_gbps
        ms = machine.machines(spec)
        pids: dict[str, int] = {}
        for m in ms:
            machine.prepare(spec, m, root, spec.paths.keys, line)
            pids[f"{m.node.name}.machine"] = machine.start(spec, m, root, extra)
        with cf.ThreadPoolExecutor(max_workers=len(ms) or 1) as pool:
            again = pool.map(lambda m: boot.boot(m, lambda: machine.start(spec, m, root, extra)), ms)
            for m, pid in zip(ms, list(again), strict=True):
                if pid is not None:
                    pids[f"{m.node.name}.machine"] = pid
        t["boot_s"] = time.perf_counter() - t0 - t["links_s"]
        daemons.wait_sshd(spec)
        # the switches start announcing once the Sparks are up: a switch's timer is its own (30 s),
        # and a lab whose first frame came before any Spark listened would only test the wait
        pids |= daemons.start_switches(spec)
        if engine.lab.runtime == "docker":  # the lab image into every Spark's Docker
            t1 = time.perf_counter()
            serving.load_image(spec, [m for m in ms if m.node.kind == "spark"], engine)
            t["image_import_s"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        took = enginecache.finish(fill)
        if took is not None:
            t["engine_cache_s"], t["engine_cache_wait_s"] = took, time.perf_counter() - t1
    finally:
        enginecache.stop(fill)
    # the state first: the cables' shaping is kept in it
    LabState(cluster=spec.cluster, inventory=inventory, engine=engine.name, spec=spec, pids=pids, timing=t).write()
    wire.link_speed(spec, mode)
    return LabState.read(spec.dir)


def down(cluster: str) -> dict[str, int]:
    """Remove everything the lab created, by name and pid; works without a state file."""
    from pyroute2 import netns

    d = lab_dir(cluster)
    ms = [machine.Machine(_node_of(p), p) for p in sorted(LabPaths(d).machines.glob("*")) if p.is_dir()]
    machine.stop(ms)
    namespaces = existing_namespaces(cluster)
    pids = daemons.lab_pids(cluster, namespaces)
    daemons.kill(pids, cluster)
    for ns in namespaces:
        try:
            netns.remove(ns)
        except FileNotFoundError:  # gone meanwhile (another `lab down` of the same lab)
            pass
    removed = links.remove_root_links(cluster)
    n_cgroups = cgroups.remove_cgroups(cluster)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
    links.wait_gone(cluster)
    return {
        "machines": len(ms),
        "namespaces": len(namespaces),
        "processes": len(pids),
        "links": removed,
        "cgroups": n_cgroups,
    }


def _node_of(path: Path) -> Any:
    """A machine found on disk (its directory and namespace's name are all `stop` needs)."""
    from sparkfab.lab.spec import Node

    return Node(path.name, ns_prefix(path.parent.parent.name) + path.name, "spark")


def leftovers(cluster: str) -> list[str]:
    """Everything of this lab still present (empty after a clean `lab down`)."""
    found = [f"namespace {n}" for n in existing_namespaces(cluster)]
    found += [f"link {name}" for name in links.root_links(cluster)]
    found += [f"cgroup {c}" for c in cgroups.cgroups_left(cluster)]
    found += [f"dir {p}" for p in sorted(machine.PROPAGATE.glob(ns_prefix(cluster) + "*"))]
    if lab_dir(cluster).exists():
        found.append(f"dir {lab_dir(cluster)}")
    return found


@dataclass(frozen=True)
class LabHost:
    ns: str
    mgmt_ip: str


@dataclass(frozen=True)
class Serving:
    """Where one instance answers in the lab: rank 0's management address."""

    url: str
    model: str | None  # the name the lab's vLLM answers to (None for the collective engine)
    engine: str | None
    tp: int
    head: str


@dataclass(frozen=True)
class LabStatus:
    """What `lab status` says; `to_dict()` is its JSON."""

    cluster: str
    id: str
    up: bool
    namespaces: tuple[str, ...]
    processes: dict[str, bool]  # the lab's own process per node (e.g. spark-a.machine) -> still running
    hosts: dict[str, LabHost]
    engine: str | None
    inventory: str
    python: str
    serving: dict[str, Serving] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status(cluster: str) -> LabStatus:
    try:
        state: LabState | None = LabState.read(lab_dir(cluster))
    except Exception:
        state = None
    namespaces = existing_namespaces(cluster)
    return LabStatus(
        cluster=cluster,
        id=lab_id(cluster),
        up=is_up(cluster),
        namespaces=tuple(namespaces),
        processes={name: daemons.ours(pid, cluster) for name, pid in (state.pids if state else {}).items()},
        hosts={n.name: LabHost(n.ns, n.mgmt_ip) for n in (state.spec.sparks if state else ())},
        engine=state.engine if state else None,
        inventory=str(lab_inventory_file(cluster)),
        python=sys.executable,
    )


#: inotify instances one booted lab Spark holds (measured: systemd 5, logind, dbus, containerd);
#: every machine runs as root, so all share root's limit
INOTIFY_PER_SPARK = 8
_INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")


def check_inotify(machines: int) -> None:
    """Refuse a lab that root's inotify limit cannot boot: past it, a Spark's systemd stops at
    once ("Failed to allocate manager object: Too many open files") and the lab fails its boot."""
    try:
        limit = int(_INOTIFY_LIMIT.read_text())
    except (OSError, ValueError):
        return
    used = sum(1 for fd in Path("/proc").glob("[0-9]*/fd/*") if _link(fd) == "anon_inode:inotify")
    need = INOTIFY_PER_SPARK * machines
    if used + need > limit:
        raise LabError(
            f"a lab of {machines} machines needs about {need} inotify instances, and root may hold {limit}"
            f" ({used} in use; fs.inotify.max_user_instances): raise it for the lab, e.g."
            f" `sysctl fs.inotify.max_user_instances={max(1024, 2 * (used + need))}`, or build a smaller lab"
        )


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""
