"""The one place that decides whether a verb works on the lab or on real Sparks.

Lab behaviour (no confirmation, networkd restarted instead of `netplan apply`, no RDMA
checks, the lab's ssh_config) comes only from the lab itself: the inventory file that
`sparkfab lab up` wrote, in the lab directory beside its `state.json` (what `--lab`
points at). Nothing a user writes into an inventory can turn it on.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sparkfab.lab.spec import lab_dir
from sparkfab.plan import Plan
from sparkfab.resolve import load_plan


def lab_of(path: str, cluster: str) -> Path | None:
    """The lab directory when `path` is the inventory of a lab that is up, else None."""
    d = lab_dir(cluster)
    try:
        same = Path(path).resolve() == (d / "inventory.yml").resolve()
    except OSError:
        return None
    return d if same and (d / "state.json").exists() else None


def load(path: str, link_speed: str | None = None) -> Plan:
    """Load and resolve an inventory (at another link speed, validated as such); a lab's own
    inventory gets the lab's variables."""
    plan = load_plan(path, link_speed)
    d = lab_of(path, plan.cluster)
    if d is None:
        return plan
    return replace(plan, group_vars={**plan.group_vars, "sparkfab_lab": True, "sparkfab_lab_dir": str(d)})
