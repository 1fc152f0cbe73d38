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

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sparkfab import connection, lock, paths, spark
from sparkfab.assets import shipped
from sparkfab.cluster.limits import files_here, selected
from sparkfab.cluster.speeds import at_current_speed
from sparkfab.connection import Connection
from sparkfab.errors import UsageError
from sparkfab.lab import inventory as lab_inv
from sparkfab.lab import serving
from sparkfab.lab.spec import spec
from sparkfab.lab.state import LabState, is_up
from sparkfab.plan import Plan
from sparkfab.render.tree import inventory as rendered_inventory
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan
from sparkfab.spark import LinkSpeed


@dataclass(frozen=True)
class Target:
    plan: Plan  # at the speeds the hosts run at now (see `speeds.at_current_speed`)
    inventory: Path  # the inventory the plays read: the user's, or the lab's copy of it
    state: Path  # the cluster's state directory
    lab: Path | None  # the lab directory when the hosts are a lab's Sparks

    @classmethod
    def load(cls, inventory: str, *, lab: bool = False, mends: str | None = None, plan: Plan | None = None) -> Target:
        """The target of `inventory` (with `lab`: its lab, which must be up). `mends`: the verb
        (`linkspeed`, `reset`) that writes the recorded speeds anew, so an unreadable record is
        dropped with a warning instead of refused (see `speeds.at_current_speed`). `plan`: `inventory`
        already resolved (each inventory is resolved once: the user's, and with `lab` the lab's)."""
        user = plan or load_plan(inventory)
        path = write_lab_inventory(inventory, user) if lab else Path(inventory)
        hosts = load_plan(str(path)) if lab else user  # with `lab`, the lab's copy is what the plays read
        d = lab_of(path, hosts.cluster)
        state = paths.LabPaths(d).cluster_state if d else paths.state_dir(hosts.cluster)
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
            state = paths.lab_paths(cluster).cluster_state
        else:
            d = lab_of(Path(inventory), cluster)
            state = paths.LabPaths(d).cluster_state if d else paths.state_dir(cluster)
        if lab and not is_up(cluster):
            raise UsageError(f"lab {cluster} is not up: run `sparkfab lab up {inventory}`")
        with lock.held(state, f"cluster {cluster}", verb):
            mends = verb if verb in ("linkspeed", "reset") else None
            yield cls.load(inventory, lab=lab, mends=mends, plan=plan)

    def render(self, plan: Plan | None = None) -> Path:
        """Render the plan (or `plan`, a variant of it) into the state's `tree/`."""
        tree = self.state / "tree"
        if tree.exists():
            shutil.rmtree(tree)
        write_tree(render(plan or self.plan, shipped()), tree)
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

    def link_gbps(self, mode: LinkSpeed) -> float:
        """The one answer to "how fast is the link at `mode`": a lab's cables at their shaped rate
        (`lab.rates`), a Spark's at the mode's line rate (`spark`'s table)."""
        if self.lab is not None:
            from sparkfab.lab import rates

            return rates.rate_gbps(mode, self.lab_scale())
        return spark.LINK_GBPS[mode]

    def lab_scale(self) -> int:
        """A lab's scale: a real link speed over its cables' shaped rate (`lab.rates.scale_for`),
        as the lab was brought up."""
        from sparkfab.lab.state import LabState

        assert self.lab is not None
        return LabState.read(self.lab).spec.scale

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
    """The lab directory when `path` is the inventory of a lab, else None: a lab's own copy, while
    its state says `lab up` made it (not `is_up`: the inventory of a lab whose namespaces are gone
    stays a lab's, refused as not up, and is never taken for real hosts)."""
    try:
        same = path.resolve() == paths.lab_inventory_file(cluster).resolve()
    except OSError:
        return None
    return paths.lab_dir(cluster) if same and paths.lab_state(cluster).exists() else None


def write_lab_inventory(inventory: str, plan: Plan) -> Path:
    """Write the lab's copy of a user's inventory (`plan`: it resolved; always from the inventory
    as it is now, so edits since `lab up` take effect; the file is rewritten only when it
    changes) and return its path."""
    if not is_up(plan.cluster):
        raise UsageError(f"lab {plan.cluster} is not up: run `sparkfab lab up {inventory}`")
    state = LabState.read(paths.lab_dir(plan.cluster))
    return lab_inv.write(inventory, spec(plan), serving.of(state.engine), plan=plan, keep_ray=state.keep_ray)
