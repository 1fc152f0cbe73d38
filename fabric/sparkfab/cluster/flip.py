"""A link-speed flip, decided below the verb: the instances it covers (a --limit matched as
Ansible matches it, whole instances only), the plan the hosts run once it is through, the hosts
its push reaches, and its record (the state's speeds and, in a lab, the cables' shaped rate: the
lab's part of the hardware). `sparkfab linkspeed` runs the plays and says what came of them."""

from __future__ import annotations

from dataclasses import dataclass

from sparkfab.cluster.limits import flipped_instances
from sparkfab.cluster.speeds import save_speeds
from sparkfab.cluster.target import Target
from sparkfab.plan import Plan
from sparkfab.resolve import load_plan
from sparkfab.spark import LinkSpeed


@dataclass(frozen=True)
class Flip:
    mode: LinkSpeed
    before: Plan  # the speeds the hosts run at now
    after: Plan  # the speeds they run at once the flip is through
    instances: tuple[str, ...] | None  # None: the whole cluster
    hosts: tuple[str, ...]  # the hosts the flip changes

    @property
    def limit(self) -> str | None:
        """The push's Ansible limit: the flipped instances' hosts (none for the whole cluster)."""
        return None if self.instances is None else ",".join(self.hosts)

    @property
    def was(self) -> str:
        """The mode (or modes) the flipped hosts run at before the flip."""
        return "/".join(sorted({self.before.mode_of(h) for h in self.hosts}))

    @property
    def scope(self) -> str:
        return self.after.cluster if self.instances is None else f"{self.after.cluster} ({', '.join(self.instances)})"

    def hca_changes(self) -> list[tuple[str, str, str]]:
        """(host, NCCL_IB_HCA before, after) for each host whose list changes."""
        out = []
        for name in self.hosts:
            h = self.after.host(name)
            old, new = ",".join(h.hca[self.before.mode_of(name)]), ",".join(h.hca[self.mode])
            if old != new:
                out.append((name, old, new))
        return out

    def record(self, target: Target) -> str | None:
        """What the hosts run now becomes the recorded speed; in a lab the flipped cables are
        shaped to the mode's rate too (the line that says so is returned)."""
        said = None
        if target.lab is not None:
            from sparkfab.lab import wire
            from sparkfab.lab.spec import spec as lab_spec

            said = wire.link_speed(lab_spec(self.after), self.mode, None if self.instances is None else set(self.hosts))
        save_speeds(target.state, self.after, self.mode, None if self.instances is None else list(self.instances))
        return said


def plan_flip(target: Target, mode: LinkSpeed, instance: str | None, limit: str | None) -> Flip:
    """The flip of `target` to `mode`: the whole cluster, `instance`, or the instances `limit`
    covers (refused when it leaves out part of one). The cluster is validated at the new speed
    (a switch's breakouts carry fewer Sparks at 200G lanes than at 100G)."""
    before = target.plan
    wanted = load_plan(str(target.inventory), mode)
    # a --limit is matched against the rendered inventory: render only then
    names = flipped_instances(before, target.render() if limit else None, instance, limit)
    if names is None:
        return Flip(mode, before, wanted.with_link_speed(mode), None, tuple(h.name for h in before.hosts))
    after = before
    for name in names:
        after = after.with_instance_speed(name, mode)
    return Flip(mode, before, after, tuple(names), tuple(h for n in names for h in before.instance(n).hosts))
