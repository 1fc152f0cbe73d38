"""The link speed a cluster's hosts run at now: the record `linkspeed` keeps in the cluster's
state (`link_speed`, and `link_speed.<instance>` for an instance flipped on its own), read back
over the inventory's speed, and cleared by `reset`. What each mode means is `spark`'s table."""

from __future__ import annotations

import sys
from pathlib import Path

from sparkfab.errors import UsageError
from sparkfab.plan import Plan
from sparkfab.spark import LinkSpeed, link_speed


def current_link_speed(plan: Plan, state: Path, mends: str | None = None) -> LinkSpeed:
    """The cluster's link-speed mode now: its last `linkspeed`, else the inventory's."""
    f = state / "link_speed"
    saved = _saved(f, plan.link_speed, mends) if f.exists() else None
    return saved or plan.link_speed


def _saved(f: Path, fallback: LinkSpeed, mends: str | None) -> LinkSpeed | None:
    """A recorded speed. One that cannot be read (emptied, garbage) is refused, except by the
    verb that writes it anew (`mends`): that verb drops it, says so, and goes on from the
    inventory's speed, so the fix the message names is one that works."""
    try:
        text = f.read_text(encoding="utf-8", errors="replace").strip()
        return link_speed(text)
    except (ValueError, OSError) as exc:
        if mends is None:
            raise UsageError(
                f"{f}: {exc}; `sparkfab linkspeed` (which writes it anew) or `sparkfab reset` clears it"
            ) from None
        f.unlink(missing_ok=True)
        sys.stderr.write(
            f"{f}: {exc}; dropped: {mends} goes on as if the hosts ran the inventory's {fallback} "
            "(`sparkfab verify` says whether they do)\n"
        )
        return None


def at_current_speed(plan: Plan, state: Path, mends: str | None = None) -> Plan:
    """The plan at the speeds the hosts run at now: the cluster's, and that of any instance
    flipped on its own (`linkspeed --instance`). `mends`: see `_saved`."""
    out = plan.with_link_speed(current_link_speed(plan, state, mends))
    for inst in plan.instances:
        f = state / f"link_speed.{inst.name}"
        saved = _saved(f, out.link_speed, mends) if f.exists() else None
        if saved:
            out = out.with_instance_speed(inst.name, saved)
    return out


def save_speeds(state: Path, plan: Plan, mode: LinkSpeed, names: list[str] | None) -> None:
    """Record a flip in the cluster's `state`: the whole cluster's (`names` None) or that of some
    instances."""
    state.mkdir(parents=True, exist_ok=True)
    if names is None:
        (state / "link_speed").write_text(mode + "\n")
        for f in state.glob("link_speed.*"):
            f.unlink()
        return
    for name in names:
        f = state / f"link_speed.{name}"
        if plan.mode_of(plan.instance(name).hosts[0]) == plan.link_speed:
            f.unlink(missing_ok=True)
        else:
            f.write_text(mode + "\n")


def forget_speeds(state: Path) -> None:
    """After a reset nothing is configured any more: the inventory's speed holds again."""
    for f in state.glob("link_speed*"):
        f.unlink()
