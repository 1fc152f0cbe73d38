"""`sparkfab apply`, `sparkfab linkspeed` and `sparkfab serve`: render, then push with Ansible."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from sparkfab.cli import command
from sparkfab.deploy import HostResult, RunResult, run_playbook, state_dir
from sparkfab.errors import DeployError, Exit, UsageError
from sparkfab.lab.spec import lab_dir
from sparkfab.plan import Plan
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from sparkfab.target import load as load_target
from sparkfab.writer import assets, write_tree

_err = Console(stderr=True, width=140)


def plan_state_dir(plan: Plan) -> Path:
    lab = plan.group_vars.get("sparkfab_lab_dir")
    return Path(lab) / "state" if lab else state_dir(plan.cluster)


def current_link_speed(plan: Plan) -> str:
    """The cluster's link-speed mode now: its last `linkspeed`, else the inventory's."""
    f = plan_state_dir(plan) / "link_speed"
    return f.read_text().strip() if f.exists() else plan.link_speed


def at_current_speed(plan: Plan) -> Plan:
    """The plan at the speeds the hosts run at now: the cluster's, and that of any instance
    flipped on its own (`linkspeed --instance`)."""
    state = plan_state_dir(plan)
    out = plan.with_link_speed(current_link_speed(plan))
    for inst in plan.instances:
        f = state / f"link_speed.{inst.name}"
        if f.exists():
            out = out.with_instance_speed(inst.name, f.read_text().strip())
    return out


def inventory_path(args: argparse.Namespace) -> str:
    if not getattr(args, "lab", False):
        return str(args.inventory)
    from sparkfab.lab import inventory as lab_inventory
    from sparkfab.lab.spec import spec

    plan = load_plan(args.inventory)
    state = lab_dir(plan.cluster) / "state.json"
    if not state.exists():
        raise UsageError(f"lab {plan.cluster} is not up: run `sparkfab lab up {args.inventory}`")
    engine = json.loads(state.read_text()).get("engine", "collective")
    # always from the inventory as it is now, so edits since `lab up` take effect
    return str(lab_inventory.write(args.inventory, spec(plan), engine))


def render_tree(plan: Plan) -> Path:
    tree = plan_state_dir(plan) / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    write_tree(render(plan, assets()), tree)
    return tree


def _confirm(plan: Plan, args: argparse.Namespace, what: str) -> None:
    if plan.group_vars.get("sparkfab_lab") or getattr(args, "yes", False) or getattr(args, "check", False):
        return
    if not sys.stdin.isatty():
        raise UsageError(f"{what} changes real hosts ({', '.join(h.name for h in plan.hosts)}): pass -y to confirm")
    answer = input(f"{what} on {len(plan.hosts)} host(s) of {plan.cluster}? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise UsageError("cancelled")


def _table(hosts: dict[str, HostResult], title: str) -> Table:
    t = Table(title=title)
    for col in ("host", "state", "ok", "changed", "failed", "unreachable", "task"):
        t.add_column(col)
    for h in sorted(hosts.values(), key=lambda x: x.host):
        style = {"failed": "red", "unreachable": "red", "changed": "yellow"}.get(h.state, "green")
        t.add_row(
            h.host,
            f"[{style}]{h.state}[/]",
            str(h.ok),
            str(h.changed),
            str(h.failed),
            str(h.unreachable),
            (h.failed_task or h.task)[:60],
        )
    return t


def run_with_progress(
    playbook: str, plan: Plan, tree: Path, args: argparse.Namespace, extravars: dict[str, object] | None = None
) -> RunResult:
    names = [h.name for h in plan.hosts]
    title = f"{playbook} on {plan.cluster}"
    live = Live(_table({}, title), console=_err, refresh_per_second=4, transient=True) if _err.is_terminal else None

    def update(hosts: dict[str, HostResult]) -> None:
        if live is not None:
            live.update(_table(hosts, title))

    if live is not None:
        live.start()
    try:
        result = run_playbook(
            playbook,
            tree / "inventory.yml",
            plan.cluster,
            check=getattr(args, "check", False),
            diff=getattr(args, "diff", False),
            limit=getattr(args, "limit", None),
            extravars=extravars,
            on_update=update,
            hosts=names,
            workdir=plan_state_dir(plan),
        )
    finally:
        if live is not None:
            live.stop()
    if not args.quiet:
        _err.print(_table(result.hosts, title))
    return result


#: a failure that is the user's to fix on the host, not a deploy error (exit 2)
REFUSALS = ("foreign netplan file:",)


def _fail_if(result: RunResult) -> None:
    refused = [h for h in result.failures if any(m in h.message for m in REFUSALS)]
    if refused:
        lines = [f"{h.host}: {h.message}" for h in refused]
        raise UsageError("\n  ".join(["apply refused on:", *lines]))
    if result.failures:
        lines = [f"{h.host}: {h.state} at task '{h.failed_task}': {h.message}" for h in result.failures]
        raise DeployError("\n  ".join(["deploy failed on:", *lines]) + f"\n  (artifacts: {result.artifacts})")


def _apply_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("--check", action="store_true", help="change nothing; report what would change")
    p.add_argument("--diff", action="store_true", help="show file differences")
    p.add_argument("--limit", help="only these hosts (Ansible pattern)")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask before changing real hosts")
    p.add_argument(
        "--take-over-netplan",
        action="store_true",
        help="move other netplan files that configure a fabric netdev to /etc/sparkfab/backup/netplan",
    )


@command("apply", "Render, then push to the hosts with Ansible (idempotent; --check --diff to preview).", _apply_args)
def apply_cmd(args: argparse.Namespace) -> int:
    plan = at_current_speed(load_target(inventory_path(args)))
    _confirm(plan, args, "apply")
    tree = render_tree(plan)
    extra: dict[str, object] | None = {"sparkfab_netplan_take_over": True} if args.take_over_netplan else None
    result = run_with_progress("site.yml", plan, tree, args, extra)
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    changed = sum(h.changed for h in result.hosts.values())
    _err.print(
        f"apply {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} "
        f"failed={len(result.failures)} (link {plan.link_speed})"
    )
    _fail_if(result)
    return Exit.OK


def _linkspeed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("mode", choices=("200", "100e"), help="200: both PCIe roots; 100e: one root (emulated 100 Gb/s)")
    p.add_argument("--instance", metavar="NAME", help="only this instance (the others keep their speed)")
    p.add_argument("--limit", help="only these hosts (Ansible pattern): whole instances, since ranks share one speed")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("-y", "--yes", action="store_true")


def flipped_instances(plan: Plan, tree: Path, instance: str | None, limit: str | None) -> list[str] | None:
    """The instances a partial flip covers (None: the whole cluster). A --limit is matched the
    way Ansible matches it, against the rendered inventory, and must cover whole instances."""
    instance_limit(plan, instance, None)  # an unknown instance is refused here
    if limit is None:
        return [instance] if instance else None
    from sparkfab.ansible_inventory import matching

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


@command("linkspeed", "Flip a running cluster between 200 Gb/s and emulated 100 Gb/s.", _linkspeed_args)
def linkspeed_cmd(args: argparse.Namespace) -> int:
    before = at_current_speed(load_target(inventory_path(args)))
    wanted = load_target(inventory_path(args), args.mode)  # the cluster validated at the new speed
    names = flipped_instances(before, render_tree(before), args.instance, args.limit)
    plan = wanted.with_link_speed(args.mode) if names is None else before
    for name in names or ():
        plan = plan.with_instance_speed(name, args.mode)
    hosts = [h.name for h in plan.hosts] if names is None else [h for n in names for h in plan.instance(n).hosts]
    limit = None if names is None else ",".join(hosts)
    _confirm(plan, args, f"linkspeed {args.mode}")
    tree = render_tree(plan)
    if plan.group_vars.get("sparkfab_lab"):
        # the lab's link speed is a shaped rate: change it before the engine restarts on it
        from sparkfab.lab import wire
        from sparkfab.lab.spec import spec as lab_spec

        _err.print(wire.link_speed(lab_spec(plan), args.mode, None if names is None else set(hosts)))
    args.limit = limit
    result = run_with_progress("linkspeed.yml", plan, tree, args)
    _fail_if(result)
    _save_speeds(plan, args.mode, names)
    for name in hosts:
        h = plan.host(name)
        old, new = ",".join(h.hca[before.mode_of(name)]), ",".join(h.hca[args.mode])
        if old != new:
            sys.stdout.write(f"{name}: NCCL_IB_HCA ={old} -> ={new}\n")
    restarted = sorted(
        h.host for h in result.hosts.values() if any(t.startswith("Serve | Start") for t in h.changed_tasks)
    )
    what = plan.cluster if names is None else f"{plan.cluster} ({', '.join(names)})"
    was = sorted({before.mode_of(h) for h in hosts})
    _err.print(f"link speed of {what}: {'/'.join(was)} -> {args.mode}; serving restarted on {len(restarted)} host(s)")
    return Exit.OK


def _save_speeds(plan: Plan, mode: str, names: list[str] | None) -> None:
    state = plan_state_dir(plan)
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


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("start", "stop", "restart"))
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("--instance", metavar="NAME", help="only this instance (its hosts; the others keep serving)")
    p.add_argument("--limit", help="only these hosts (Ansible pattern; with --instance, both must match)")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("-y", "--yes", action="store_true")


def instance_limit(plan: Plan, instance: str | None, limit: str | None) -> str | None:
    """An Ansible --limit for one instance's hosts (and a user's pattern on top)."""
    if instance is None:
        return limit
    names = [i.name for i in plan.instances]
    if instance not in names:
        raise UsageError(f"--instance {instance}: {plan.cluster} has the instance(s) {', '.join(names) or '(none)'}")
    hosts = ",".join(plan.instance(instance).hosts)
    return f"{hosts}:&{limit}" if limit else hosts


@command("serve", "Start or stop serving: workers first, rank 0 last, then a health wait.", _serve_args)
def serve_cmd(args: argparse.Namespace) -> int:
    plan = at_current_speed(load_target(inventory_path(args)))
    args.limit = instance_limit(plan, args.instance, args.limit)
    _confirm(plan, args, f"serve {args.action}")
    tree = render_tree(plan)  # what serving starts is what the inventory says now
    result = run_with_progress("serve.yml", plan, tree, args, {"sparkfab_serve_action": args.action})
    _fail_if(result)
    return Exit.OK


def _reset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("--check", action="store_true", help="change nothing; report what would be removed")
    p.add_argument("--diff", action="store_true", help="show the files that would go or come back")
    p.add_argument("--limit", help="only these hosts (Ansible pattern)")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask before changing real hosts")


@command(
    "reset",
    "Undo apply: stop serving, remove what sparkfab installed, restore what it moved aside (--check --diff).",
    _reset_args,
)
def reset_cmd(args: argparse.Namespace) -> int:
    plan = at_current_speed(load_target(inventory_path(args)))
    _confirm(plan, args, "reset")
    tree = render_tree(plan)  # the hosts' netdevs and instances, as the plays read them
    result = run_with_progress("reset.yml", plan, tree, args)
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    _fail_if(result)
    if not args.check and not args.limit:
        for f in plan_state_dir(plan).glob("link_speed*"):  # nothing is configured any more
            f.unlink()
    changed = sum(h.changed for h in result.hosts.values())
    _err.print(
        f"reset {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} failed={len(result.failures)}"
    )
    return Exit.OK
