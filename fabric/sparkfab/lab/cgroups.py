"""The lab's cgroups, one owner for them: each lab Spark's init (its units) and each lab Spark's
Docker (its containers) get a subtree of their own, `sparkfab-lab/<cluster>/<host>`, in every
hierarchy this machine has; `lab down` removes them and finds every process left in them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sparkfab.lab.spec import LabSpec, Node

#: the top of the lab's cgroups in every hierarchy (one subtree per Spark below it, so that two
#: Sparks' inits or Dockers never meet in the host's hierarchies)
CGROUP_PARENT = "sparkfab-lab"
#: the v1 controllers a lab Spark's Docker sees (bound into the machine for it)
CGROUP_CONTROLLERS = ("blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids")


def cgroup_parent(spec: LabSpec, node: Node) -> str:
    """Where the Spark's Docker puts its containers' cgroups (daemon.json's cgroup-parent)."""
    return f"/{CGROUP_PARENT}/{spec.cluster}/{node.name}"


def init_hierarchies() -> list[Path]:
    """The cgroup hierarchies a machine's init keeps its units in: the unified one (cgroup2),
    and on a hybrid host also the named `systemd` one. nspawn makes the machine's root cgroup
    inside its own, so each machine's supervisor gets a cgroup of its own in each of them.
    Without that every machine's units share one tree (`/payload/system.slice/...`): one
    machine removed a unit's cgroup while another machine's systemd moved a process into it
    (`status=219/CGROUP`, a boot left degraded), and a machine that stopped ssh.service waited
    for the other machines' sessions in it (a reboot took 90 s)."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.procs").exists():  # a unified host
        return [root]
    return [root / h for h in ("unified", "systemd") if (root / h / "cgroup.procs").exists()]


def init_cgroups(spec: LabSpec, node: Node) -> list[Path]:
    return [h / CGROUP_PARENT / spec.cluster / node.name for h in init_hierarchies()]


def _lab_cgroups(cluster: str) -> list[Path]:
    """The top of this lab's cgroups in every hierarchy: its machines' (init) and its Dockers'."""
    hierarchies = [Path("/sys/fs/cgroup") / c for c in CGROUP_CONTROLLERS] + init_hierarchies()
    return [h / CGROUP_PARENT / cluster for h in dict.fromkeys(hierarchies)]


def _tree(top: Path) -> list[Path]:
    """`top` and every cgroup below it, deepest first. The machines' own systemd removes its
    units' cgroups while they stop, so a directory may go between two looks (os.walk skips it
    where Path.rglob raised FileNotFoundError and failed `lab down`)."""
    return [Path(d) for d, _, _ in os.walk(top, topdown=False)]


def remove_cgroups(cluster: str, wait: float = 5.0) -> int:
    """The lab's cgroups, deepest first; how many there were. Once its machines are down they
    empty: a killed process leaves its cgroup a moment after the signal, so a busy one is
    tried again for up to `wait` seconds."""
    n = 0
    deadline = time.monotonic() + wait
    for top in _lab_cgroups(cluster):
        for d in _tree(top):
            while True:
                try:
                    d.rmdir()
                    n += 1
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
        try:
            top.parent.rmdir()  # shared by every lab: only once the last is gone
        except OSError:
            pass
    return n


def cgroup_pids(cluster: str) -> set[int]:
    """Every process in the lab's cgroups: what its machines run, whatever namespace it is in."""
    pids: set[int] = set()
    for top in _lab_cgroups(cluster):
        for d in _tree(top):
            try:
                pids |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
    return pids


def cgroups_left(cluster: str) -> list[str]:
    return [str(p) for p in _lab_cgroups(cluster) if p.exists()]
