"""What a verb that reaches hosts works on: one `Target`, built once per command.

A Target is the resolved plan at the speeds the hosts run now, the inventory file the plays
read, the directory that holds the cluster's state, and whether the hosts are a lab's. That last
fact comes only from the lab itself: the inventory file that `sparkfab lab up` wrote, in the lab
directory beside its `state.json` (what `--lab` points at). Nothing a user writes into an
inventory can turn it on, and it changes only what must differ in a lab: the lab's ssh_config,
no confirmation, and the cables' shaped rate that `linkspeed` sets and `bench` records (a lab
has no PCIe roots to take away). Plays and checks run on a lab Spark as on a Spark.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sparkfab import connection, lock, paths
from sparkfab.ansible_inventory import matching
from sparkfab.connection import Connection
from sparkfab.errors import UsageError
from sparkfab.lab import inventory as lab_inv
from sparkfab.lab.spec import spec
from sparkfab.lab.state import LabState
from sparkfab.plan import Plan
from sparkfab.render.tree import inventory as rendered_inventory
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from sparkfab.spark import LinkSpeed, link_speed
from sparkfab.writer import assets, write_tree


@dataclass(frozen=True)
class Target:
    plan: Plan  # at the speeds the hosts run at now (see `at_current_speed`)
    inventory: Path  # the inventory the plays read: the user's, or the lab's copy of it
    state: Path  # the cluster's state directory
    lab: Path | None  # the lab directory when the hosts are a lab's Sparks

    @classmethod
    def load(cls, inventory: str, *, lab: bool = False, mends: str | None = None, plan: Plan | None = None) -> Target:
        """The target of `inventory` (with `lab`: its lab, which must be up). `mends`: the verb
        (`linkspeed`, `reset`) that writes the recorded speeds anew, so an unreadable record is
        dropped with a warning instead of refused (see `at_current_speed`). `plan`: `inventory`
        already resolved (each inventory is resolved once: the user's, and with `lab` the lab's)."""
        user = plan or load_plan(inventory)
        path = lab_inventory(inventory, user) if lab else Path(inventory)
        hosts = load_plan(str(path)) if lab else user  # with `lab`, the lab's copy is what the plays read
        d = lab_of(path, hosts.cluster)
        state = d / "state" if d else paths.state_dir(hosts.cluster)
        return cls(at_current_speed(hosts, state, mends), path, state, d)

    @classmethod
    @contextmanager
    def held(cls, inventory: str, verb: str, *, lab: bool = False) -> Iterator[Target]:
        """The target of a verb that changes hosts or the recorded state, with the cluster's
        lock held for the block (`sparkfab.lock`): taken before the recorded speeds are read,
        so that what this verb reads is what no other verb is changing."""
        plan = load_plan(inventory)
        cluster = plan.cluster
        if lab:
            state = paths.lab_dir(cluster) / "state"
        else:
            d = lab_of(Path(inventory), cluster)
            state = d / "state" if d else paths.state_dir(cluster)
        if lab and not paths.lab_state(cluster).exists():
            raise UsageError(f"lab {cluster} is not up: run `sparkfab lab up {inventory}`")
        with lock.held(state, f"cluster {cluster}", verb):
            mends = verb if verb in ("linkspeed", "reset") else None
            yield cls.load(inventory, lab=lab, mends=mends, plan=plan)

    def render(self, plan: Plan | None = None) -> Path:
        """Render the plan (or `plan`, a variant of it) into the state's `tree/`."""
        tree = self.state / "tree"
        if tree.exists():
            shutil.rmtree(tree)
        write_tree(render(plan or self.plan, assets()), tree)
        return tree

    def limited(self, limit: str | None) -> set[str] | None:
        """The hosts a read-only verb's --limit selects (None: all), matched as ansible-playbook
        matches it against the rendered inventory, which is written to a scratch folder (the
        state's `tree/` belongs to the verbs that hold the lock)."""
        if not limit:
            return None
        with tempfile.TemporaryDirectory(prefix="sparkfab-limit-") as scratch:
            inv = rendered_inventory(self.plan)  # the inventory alone: no host's files are needed
            (Path(scratch) / inv.path).write_text(inv.content)
            return set(selected(self.plan, Path(scratch), files_here(limit)))

    def work(self, verb: str) -> Path:
        """A verb's own working directory in the state (ssh_config, sockets, downloads)."""
        return self.state / verb

    def connection(self, verb: str) -> Connection:
        """How `verb` reaches the hosts: as Ansible does (its ssh_config in the verb's working
        directory), or through the lab's ssh_config."""
        return connection.for_plan(self.plan, self.work(verb), self.lab)

    def unreachable_why(self, host: str) -> str:
        """What can be seen of `host` where it does not answer: on a lab, what the lab host sees
        of that Spark (its machine, port, sshd, firewall); on hardware nothing ("")."""
        if self.lab is None:
            return ""
        from sparkfab.lab import probe

        try:
            return probe.unreachable(LabState.read(self.lab).spec, host)
        except Exception as exc:  # it is added to an error that must still be said
            return f"(the lab's view could not be read: {exc})"


def lab_of(path: Path, cluster: str) -> Path | None:
    """The lab directory when `path` is the inventory of a lab that is up, else None."""
    try:
        same = path.resolve() == paths.lab_inventory(cluster).resolve()
    except OSError:
        return None
    return paths.lab_dir(cluster) if same and paths.lab_state(cluster).exists() else None


def lab_inventory(inventory: str, plan: Plan) -> Path:
    """Write the lab's copy of a user's inventory (`plan`: it resolved; always from the inventory
    as it is now, so edits since `lab up` take effect; the file is rewritten only when it
    changes) and return its path."""
    if not paths.lab_state(plan.cluster).exists():
        raise UsageError(f"lab {plan.cluster} is not up: run `sparkfab lab up {inventory}`")
    state = LabState.read(paths.lab_dir(plan.cluster))
    return lab_inv.write(inventory, spec(plan), state.engine, plan=plan, keep_ray=state.keep_ray)


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


def save_speeds(target: Target, plan: Plan, mode: LinkSpeed, names: list[str] | None) -> None:
    """Record a flip: the whole cluster's (`names` None) or that of some instances."""
    state = target.state
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


def forget_speeds(target: Target) -> None:
    """After a reset nothing is configured any more: the inventory's speed holds again."""
    for f in target.state.glob("link_speed*"):
        f.unlink()


def instance_limit(plan: Plan, instance: str | None, limit: str | None) -> str | None:
    """An Ansible --limit for one instance's hosts (and a user's pattern on top)."""
    if instance is None:
        return limit
    names = [i.name for i in plan.instances]
    if instance not in names:
        raise UsageError(f"--instance {instance}: {plan.cluster} has the instance(s) {', '.join(names) or '(none)'}")
    hosts = ",".join(plan.instance(instance).hosts)
    return f"{hosts}:&{limit}" if limit else hosts


def files_here(limit: str | None) -> str | None:
    """A --limit whose `@FILE` parts name files of the working directory (Ansible runs from the
    playbooks' directory, where a relative one would be looked for)."""
    if not limit:
        return limit
    return "".join(f"@{Path(x[1:]).resolve()}" if x.startswith("@") else x for x in re.split(r"([,:])", limit))


def selected(plan: Plan, tree: Path, limit: str | None) -> list[str]:
    """The hosts a run will touch: all, or what `limit` selects as ansible-playbook selects it
    (matched against the rendered inventory, before any host is contacted). A limit that
    selects none is refused."""
    if not limit:
        return [h.name for h in plan.hosts]
    hosts = matching(tree / "inventory.yml", limit)
    if not hosts:
        raise UsageError(f"--limit {limit} selects no host of {plan.cluster}")
    return hosts


def flipped_instances(plan: Plan, tree: Path | None, instance: str | None, limit: str | None) -> list[str] | None:
    """The instances a partial flip covers (None: the whole cluster). A --limit is matched the
    way Ansible matches it, against the rendered inventory, and must cover whole instances."""
    instance_limit(plan, instance, None)  # an unknown instance is refused here
    if limit is None:
        return [instance] if instance else None
    assert tree is not None, "a --limit is matched against the rendered tree"
    chosen = set(matching(tree / "inventory.yml", limit))
    names = [instance] if instance else [i.name for i in plan.instances if chosen & set(i.hosts)]
    for name in names:
        missing = sorted(set(plan.instance(name).hosts) - chosen)
        if missing:
            raise UsageError(
                f"--limit {limit} leaves out {', '.join(missing)} of {name}: its ranks share one link speed"
            )
    if not names:
        raise UsageError(f"--limit {limit} matches no host of an instance")
    return names
