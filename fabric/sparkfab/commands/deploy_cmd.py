"""`sparkfab apply`, `linkspeed` and `reset`: render, then push with Ansible (one Target each; `serve` is
`serve_cmd`, and the run as people see it `runs`)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from sparkfab import spark
from sparkfab.cluster.flip import Flip, plan_flip
from sparkfab.cluster.limits import files_here, selected
from sparkfab.cluster.speeds import forget_speeds
from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_changes, add_target
from sparkfab.commands.runs import RunOptions, confirm, fail_if, passed_over, run_options, run_with_progress, say_said
from sparkfab.errors import Exit
from sparkfab.push import tasks
from sparkfab.push.run import RunResult
from sparkfab.render.launch import secret_names

_err = Console(stderr=True, width=140)


def _apply_args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_changes(p, check="change nothing; report what would change", diff="show file differences")
    p.add_argument(
        "--take-over-netplan",
        action="store_true",
        help="move other netplan files that configure a fabric netdev to /etc/sparkfab/backup/netplan",
    )


def apply_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "apply", lab=args.lab) as target:
        return _apply(target, args)


def _apply(target: Target, args: argparse.Namespace) -> int:
    from sparkfab import oracle

    plan = target.plan
    oracle.check(plan, None if args.quiet else lambda text: _err.print(f"note: {text}", markup=False))
    tree = target.render()
    limit = files_here(args.limit)
    opts = run_options(args)
    confirm(target, args, "apply", selected(plan, tree, limit))
    extra: dict[str, object] | None = {"sparkfab_netplan_take_over": True} if args.take_over_netplan else None
    result = run_with_progress("site.yml", target, tree, opts, extra, secrets=secret_names(plan), limit=limit)
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    changed = sum(h.changed for h in result.hosts.values())
    _err.print(
        f"apply {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} "
        f"failed={len(result.failures)} (link {plan.link_speed})"
    )
    fail_if(result, target)
    return Exit.OK


def _linkspeed_args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    p.add_argument("mode", choices=spark.FLIP_SPEEDS, help="200: both PCIe roots; 100e: one root (emulated 100 Gb/s)")
    p.add_argument("--instance", metavar="NAME", help="only this instance (the others keep their speed)")
    add_changes(
        p,
        limit="only these hosts (Ansible pattern): whole instances, since ranks share one speed",
        check="say what the flip would change (each host's files, the engines it would restart); change nothing",
        diff="show the lines of each file that would change",
        starts_engines=True,
    )


def linkspeed_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "linkspeed", lab=args.lab) as target:
        return _linkspeed(target, args)


#: why a flip and a reset run whole (no --tags)
WHOLE_FLIP = "a flip pushes the NCCL environment and restarts serving together (`apply --tags nccl` pushes it alone)"
WHOLE_RESET = "a reset stops serving and removes everything sparkfab installed, in one step per host"


def _linkspeed(target: Target, args: argparse.Namespace) -> int:
    opts = run_options(args, WHOLE_FLIP)
    flip = plan_flip(target, args.mode, args.instance, files_here(args.limit))
    confirm(target, args, f"linkspeed {args.mode}", list(flip.hosts))
    tree = target.render(flip.after)
    result = run_with_progress("linkspeed.yml", target, tree, opts, plan=flip.after, limit=flip.limit)
    if result.failures and not args.check:
        # the first task checks every host and stops all of them when one fails; the push stops
        # every host when one fails in it, before serving is touched: the flip ends whole (the
        # push went everywhere, serving is what failed), not at all, or is rolled back
        if all(_serving(h.failed_task or "") for h in result.failures):
            _err.print(f"linkspeed {args.mode}: every host runs {args.mode} now; serving did not restart everywhere")
            _say(flip.record(target))
        else:
            _roll_back(target, flip, result, args.mode, opts)
    fail_if(result, target)
    if args.check:
        return _preview_flip(result, args.mode, flip.was)
    _say(flip.record(target))
    say_said(result)
    for name, old, new in flip.hca_changes():
        sys.stdout.write(f"{name}: NCCL_IB_HCA ={old} -> ={new}\n")
    restarted = sorted(
        h.host for h in result.hosts.values() if any(t.startswith(tasks.SERVE_START) for t in h.changed_tasks)
    )
    _err.print(f"link speed of {flip.scope}: {flip.was} -> {args.mode}; serving restarted on {len(restarted)} host(s)")
    return Exit.OK


def _serving(task: str) -> bool:
    """A task of the flip's last part, serving's restart (after the push went everywhere)."""
    return task.startswith(tasks.SERVE) and not task.startswith(tasks.SERVE_PROBE)


def _say(line: str | None) -> None:
    if line:
        _err.print(line)


def _preview_flip(result: RunResult, mode: str, was: str) -> int:
    """linkspeed --check: which hosts' files the flip would replace and where it would restart
    serving (the engines that run there), with nothing changed or recorded."""
    files = sorted(h.host for h in result.hosts.values() if any(t.startswith(tasks.FILES) for t in h.changed_tasks))
    serving = passed_over(result, *tasks.SERVE_STOP)
    _err.print(
        f"linkspeed {mode} --check ({was} now): would replace files on {len(files)} host(s)"
        + (f" ({', '.join(files)})" if files else "")
        + f" and restart serving on {len(serving)}; nothing changed"
    )
    return Exit.OK


def _roll_back(target: Target, flip: Flip, result: RunResult, mode: str, opts: RunOptions) -> None:
    """A flip that failed in its push: the hosts it changed get their old files back (serving
    was not touched), so that every host runs the recorded speed again; says which way it ended."""
    changed = sorted(h.host for h in result.hosts.values() if h.changed)
    if not changed:
        _err.print(f"linkspeed {mode} changed nothing: every host is checked before any host changes")
        return
    was = flip.was
    _err.print(f"linkspeed {mode} failed after it changed {', '.join(changed)}: rolling them back to {was}")
    undo = run_with_progress(
        "linkspeed.yml",
        target,
        target.render(flip.before),
        opts,
        {"sparkfab_serve_action": "none"},
        plan=flip.before,
        limit=",".join(changed),
    )
    if undo.failures:
        left = sorted(h.host for h in undo.failures)
        _err.print(
            f"linkspeed {mode} stopped part-way: the roll-back failed on {', '.join(left)}, which may run "
            f"{mode} while the recorded speed is {was}. Run `sparkfab linkspeed` again once every host "
            "answers: it converges."
        )
    else:
        _err.print(f"linkspeed {mode} rolled back: {', '.join(changed)} run {was} again, as recorded")


def _reset_args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_changes(
        p, check="change nothing; report what would be removed", diff="show the files that would go or come back"
    )


def reset_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "reset", lab=args.lab) as target:
        return _reset(target, args)


def _reset(target: Target, args: argparse.Namespace) -> int:
    opts = run_options(args, WHOLE_RESET)
    plan = target.plan
    tree = target.render()  # the hosts' netdevs and instances, as the plays read them
    limit = files_here(args.limit)
    confirm(target, args, "reset", selected(target.plan, tree, limit))
    result = run_with_progress("reset.yml", target, tree, opts, limit=limit)
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    fail_if(result, target)
    if not args.check and not limit:
        forget_speeds(target.state)
    changed = sum(h.changed for h in result.hosts.values())
    _err.print(
        f"reset {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} failed={len(result.failures)}"
    )
    return Exit.OK


VERBS = (
    Verb(
        "apply",
        "Render, then push to the hosts with Ansible (idempotent; --check --diff to preview).",
        _apply_args,
        apply_cmd,
    ),
    Verb("linkspeed", "Flip a running cluster between 200 Gb/s and emulated 100 Gb/s.", _linkspeed_args, linkspeed_cmd),
    Verb(
        "reset",
        "Undo apply: stop serving, remove what sparkfab installed, restore what it moved aside (--check --diff).",
        _reset_args,
        reset_cmd,
    ),
)
