"""What a bench and a sampler measure on a cluster: the counters of one of its Sparks, the
instances a URL can be, the run's context for its run.json (the cluster, the link-speed mode of
the instance measured and its rate, its TP), and a reader of files on the measured instance's
rank 0 (the served checkpoint's config.json, which vLLM names by its path there)."""

from __future__ import annotations

import shlex
import urllib.parse
from collections.abc import Callable
from typing import Any

from sparkfab.cluster.target import Target
from sparkfab.connection import as_root
from sparkfab.errors import UsageError
from sparkfab.plan import Instance, Plan


def served(plan: Plan, url: str, instance: str | None) -> list[Instance]:
    """The instances the URL can be: `instance`, else those serving on the URL's port, else all."""
    if instance:
        return [plan.instance(instance)]
    port = urllib.parse.urlsplit(url).port
    return [i for i in plan.instances if i.port == port] or list(plan.instances)


def context(target: Target, inventory: str, url: str, instance: str | None) -> dict[str, Any]:
    """run.json's `inventory`: the cluster, the mode of the instance measured (one may run at its
    own: `linkspeed --instance`) and the link's Gb/s at it (`Target.link_gbps`), a lab's shaped
    rate in words, and the instance and its TP where the URL is one instance's."""
    plan = target.plan
    mine = served(plan, url, instance)
    mode = plan.mode_of(mine[0].hosts[0]) if len(mine) == 1 else plan.link_speed
    ctx: dict[str, Any] = {"path": inventory, "cluster": plan.cluster, "link_speed": mode}
    ctx["link_gbps"] = target.link_gbps(mode)
    if target.lab is not None:
        from sparkfab.lab import rates

        ctx.update(lab=True, link_rate=rates.rate_text(mode, target.lab_scale()))
    if len(mine) == 1:
        ctx.update(instance=mine[0].name, tp=mine[0].tp)
    return ctx


def rank0_reader(inventory: str, lab: bool, url: str, instance: str | None) -> Callable[[str], str | None]:
    """A reader of a file (its first MiB) on the measured instance's rank 0, as root as verify
    reads; None where the host cannot be reached or the file read: the run goes on without it."""

    def read(path: str) -> str | None:
        target = Target.load(inventory, lab=lab)
        inst = served(target.plan, url, instance)[0]
        try:
            host = as_root(target.connection("bench").remote(inst.hosts[0]))
            res = host.run(f"head -c 1048576 {shlex.quote(path)}")
        except Exception:  # unreachable, no sudo
            return None
        return str(res.stdout) if res.rc == 0 else None

    return read


def host_devices(inventory: str, name: str, source: str) -> list[str]:
    """The counters of one Spark of an inventory: its RDMA devices in the current link-speed
    mode, or with source netdev every fabric netdev it has."""
    plan = Target.load(inventory).plan
    if name not in {h.name for h in plan.hosts}:
        raise UsageError(f"{name} is not a host of {inventory}")
    host = plan.host(name)
    return list(host.hca[plan.mode_of(name)]) if source == "rdma" else list(host.fabric_ifs)
