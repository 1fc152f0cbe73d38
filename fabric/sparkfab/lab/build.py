"""Bring a lab up, take it down, say what it is: the lifecycle over `links`, `hostfs`,
`daemons` and `login` (one module per concern). `down` works from names and pids alone, so it
also cleans up after a crash half-way through `up`.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sparkfab.errors import LabError
from sparkfab.lab import daemons, hostfs, links, login
from sparkfab.lab.links import existing_namespaces
from sparkfab.lab.spec import LabSpec, lab_id, ns_prefix
from sparkfab.paths import lab_dir, lab_inventory, lab_state


def up(spec: LabSpec) -> dict[str, Any]:
    if existing_namespaces(spec.cluster):
        raise LabError(
            f"lab {spec.cluster} is already up (namespaces {ns_prefix(spec.cluster)}*): run `sparkfab lab down` first"
        )
    t0 = time.perf_counter()
    spec.dir.mkdir(parents=True, exist_ok=True)
    (spec.dir / "pids").mkdir(exist_ok=True)
    try:
        links.namespaces(spec)
        links.mgmt(spec)
        links.fabric(spec)
        t_links = time.perf_counter() - t0
        login.create(spec)
        hostfs.ssh_keys(spec)
        hostfs.etc(spec)
        pids = daemons.start(spec)
        daemons.wait_sshd(spec)
    except Exception:
        down(spec.cluster)
        raise
    state = {
        "cluster": spec.cluster,
        "id": spec.id,
        "mgmt_net": spec.mgmt_net,
        "root_ip": spec.root_ip,
        "namespaces": [n.ns for n in spec.nodes],
        "pids": pids,
        "hosts": {n.name: {"ns": n.ns, "mgmt_ip": n.mgmt_ip} for n in spec.sparks},
        "timing": {"links_s": round(t_links, 3), "total_s": round(time.perf_counter() - t0, 3)},
    }
    (spec.dir / "state.json").write_text(json.dumps(state, indent=2))
    return state


def down(cluster: str) -> dict[str, int]:
    """Remove everything the lab created, by name and pid; works without a state file."""
    from pyroute2 import netns

    namespaces = existing_namespaces(cluster)
    pids = daemons.lab_pids(cluster, namespaces)
    daemons.kill(pids, cluster)
    for ns in namespaces:
        try:
            netns.remove(ns)
        except FileNotFoundError:  # gone meanwhile (another `lab down` of the same lab)
            pass
    removed = links.remove_root_links(cluster)
    dirs = hostfs.remove_etc(cluster)
    hostfs.remove_mountpoints(cluster)
    login.remove(cluster)
    if lab_dir(cluster).exists():
        shutil.rmtree(lab_dir(cluster), ignore_errors=True)
    links.wait_gone(cluster)
    return {"namespaces": len(namespaces), "processes": len(pids), "links": removed, "etc_dirs": dirs}


def leftovers(cluster: str) -> list[str]:
    """Everything of this lab still present (empty after a clean `lab down`)."""
    found = [f"namespace {n}" for n in existing_namespaces(cluster)]
    found += [f"link {name}" for name in links.root_links(cluster)]
    found += [f"dir {d}" for d in hostfs.etc_left(cluster)]
    if lab_dir(cluster).exists():
        found.append(f"dir {lab_dir(cluster)}")
    return found + login.leftovers(cluster)


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
    processes: dict[str, bool]  # the lab's own process per node (e.g. spark-a.sshd) -> still running
    hosts: dict[str, LabHost]
    engine: str | None
    inventory: str
    python: str
    serving: dict[str, Serving] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status(cluster: str) -> LabStatus:
    state_file = lab_state(cluster)
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    namespaces = existing_namespaces(cluster)
    return LabStatus(
        cluster=cluster,
        id=lab_id(cluster),
        up=bool(namespaces),
        namespaces=tuple(namespaces),
        processes={name: daemons.ours(pid, cluster) for name, pid in state.get("pids", {}).items()},
        hosts={name: LabHost(h["ns"], h["mgmt_ip"]) for name, h in state.get("hosts", {}).items()},
        engine=state.get("engine"),
        inventory=str(lab_inventory(cluster)),
        python=sys.executable,
    )
