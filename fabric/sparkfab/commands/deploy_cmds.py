"""`sparkfab apply`, `linkspeed`, `serve` and `reset`: render, then push with Ansible (one Target each)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sparkfab import spark
from sparkfab.commands.common import Verb, add_changes, add_format, add_target
from sparkfab.deploy import HostResult, Interrupted, RunResult, run_playbook
from sparkfab.errors import DeployError, Exit, Terminated, UsageError
from sparkfab.plan import Plan
from sparkfab.render.launch import secret_names
from sparkfab.resolve import load_plan
from sparkfab.target import (
    Target,
    files_here,
    flipped_instances,
    forget_speeds,
    instance_limit,
    save_speeds,
    selected,
)

_err = Console(stderr=True, width=140)


def _confirm(target: Target, args: argparse.Namespace, what: str, hosts: list[str] | None = None) -> None:
    if target.lab is not None or args.yes or getattr(args, "check", False):
        return
    plan = target.plan
    names = hosts if hosts is not None else [h.name for h in plan.hosts]
    if not sys.stdin.isatty():
        raise UsageError(f"{what} changes real hosts ({', '.join(names)}): pass -y to confirm")
    which = "" if len(names) == len(plan.hosts) else f" ({', '.join(names)})"
    answer = input(f"{what} on {len(names)} host(s) of {plan.cluster}{which}? [y/N] ")
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
            Text(h.state, style=style),
            str(h.ok),
            str(h.changed),
            str(h.failed),
            str(h.unreachable),
            (h.failed_task or h.task)[:60],
        )
    return t


def run_with_progress(
    playbook: str,
    target: Target,
    tree: Path,
    args: argparse.Namespace,
    extravars: dict[str, object] | None = None,
    plan: Plan | None = None,
    secrets: list[str] | None = None,
) -> RunResult:
    plan = plan or target.plan
    names = [h.name for h in plan.hosts]
    title = f"{playbook} on {plan.cluster}"
    verbose = getattr(args, "verbose", 0)
    # with -v, Ansible's own output scrolls by instead of the live table
    live = None
    if _err.is_terminal and not verbose:
        live = Live(_table({}, title), console=_err, refresh_per_second=4, transient=True)

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
            limit=args.limit,
            extravars=extravars,
            timeout=getattr(args, "timeout", None),
            on_update=update,
            hosts=names,
            workdir=target.state,
            secrets=secrets,
            verbosity=verbose,
        )
    except Interrupted as exc:  # the table so far, whatever -q says: the run ends part-way
        if live is not None:
            live.stop()
        how = "terminated" if isinstance(exc.__cause__, Terminated) else "interrupted"
        _err.print(_table(exc.result.hosts, f"{title}: {how}, ansible-playbook ended"))
        raise
    finally:
        if live is not None:
            live.stop()
    if not args.quiet:
        _err.print(_table(result.hosts, title))
    return result


#: a failure that is the user's to fix on the host, not a deploy error (exit 2)
REFUSALS = ("foreign netplan file:",)


#: what ssh says when a host's key is not the one known for it (a reinstall, or someone else), and
#: what Mitogen's connection says for it (mitogen/ssh.py: hostkey_failed_msg)
KEY_CHANGED = (
    "REMOTE HOST IDENTIFICATION HAS CHANGED",
    "Host key verification failed",
    "SSH reported an unrecognized or mismatching host key",
)


def _fail_if(result: RunResult, plan: Plan | None = None) -> None:
    refused = [h for h in result.failures if any(m in h.message for m in REFUSALS)]
    if refused:
        lines = [f"{h.host}: {h.message}" for h in refused]
        raise UsageError("\n  ".join(["apply refused on:", *lines]))
    if result.failures:
        lines = []
        for h in result.failures:
            if any(m in h.message for m in KEY_CHANGED):
                addr = plan.host(h.host).ansible.get("ansible_host", h.host) if plan else h.host
                lines.append(
                    f"{h.host}: refused: its SSH host key is not the one known for {addr}; if the host was "
                    f"reinstalled, forget the old key (`ssh-keygen -R {addr}`, in the known_hosts file ssh "
                    "names) and run again"
                )
            else:
                lines.append(f"{h.host}: {h.state} at task '{h.failed_task}': {h.message}")
        raise DeployError("\n  ".join(["deploy failed on:", *lines]) + f"\n  (artifacts: {result.artifacts})")


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
    args.limit = files_here(args.limit)
    _confirm(target, args, "apply", selected(plan, tree, args.limit))
    extra: dict[str, object] | None = {"sparkfab_netplan_take_over": True} if args.take_over_netplan else None
    result = run_with_progress("site.yml", target, tree, args, extra, secrets=secret_names(plan))
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    changed = sum(h.changed for h in result.hosts.values())
    _err.print(
        f"apply {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} "
        f"failed={len(result.failures)} (link {plan.link_speed})"
    )
    _fail_if(result, target.plan)
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
    )


def linkspeed_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "linkspeed", lab=args.lab) as target:
        return _linkspeed(target, args)


def _linkspeed(target: Target, args: argparse.Namespace) -> int:
    before = target.plan
    args.limit = files_here(args.limit)
    wanted = load_plan(str(target.inventory), args.mode)  # the cluster validated at the new speed
    # a --limit is matched against the rendered inventory: render only then
    names = flipped_instances(before, target.render() if args.limit else None, args.instance, args.limit)
    plan = wanted.with_link_speed(args.mode) if names is None else before
    for name in names or ():
        plan = plan.with_instance_speed(name, args.mode)
    hosts = [h.name for h in plan.hosts] if names is None else [h for n in names for h in plan.instance(n).hosts]
    limit = None if names is None else ",".join(hosts)
    _confirm(target, args, f"linkspeed {args.mode}", hosts)
    tree = target.render(plan)
    args.limit = limit
    result = run_with_progress("linkspeed.yml", target, tree, args, plan=plan)
    was = "/".join(sorted({before.mode_of(h) for h in hosts}))
    if result.failures and not getattr(args, "check", False):
        # the first play checks every host and stops all of them when one fails; the push stops
        # every host when one fails in it, before serving is touched: the flip ends whole (the
        # push went everywhere, serving is what failed), not at all, or is rolled back
        if all((h.failed_task or "").startswith("Serve |") for h in result.failures):
            _err.print(f"linkspeed {args.mode}: every host runs {args.mode} now; serving did not restart everywhere")
            _record_flip(target, plan, args.mode, names, hosts)
        else:
            _roll_back(target, before, result, args, was)
    _fail_if(result, target.plan)
    if args.check:
        return _preview_flip(result, args.mode, was)
    _record_flip(target, plan, args.mode, names, hosts)
    for name in hosts:
        h = plan.host(name)
        old, new = ",".join(h.hca[before.mode_of(name)]), ",".join(h.hca[args.mode])
        if old != new:
            sys.stdout.write(f"{name}: NCCL_IB_HCA ={old} -> ={new}\n")
    restarted = sorted(
        h.host for h in result.hosts.values() if any(t.startswith("Serve | Start") for t in h.changed_tasks)
    )
    what = plan.cluster if names is None else f"{plan.cluster} ({', '.join(names)})"
    _err.print(f"link speed of {what}: {was} -> {args.mode}; serving restarted on {len(restarted)} host(s)")
    return Exit.OK


def _preview_flip(result: RunResult, mode: str, was: str) -> int:
    """linkspeed --check: which hosts' files the flip would replace and where it would restart
    serving (the engines that run there), with nothing changed or recorded."""
    files = sorted(h.host for h in result.hosts.values() if any(t.startswith("Files |") for t in h.changed_tasks))
    serving = _passed_over(result, "Serve | Stop the engine", "Serve | Remove the engine")
    _err.print(
        f"linkspeed {mode} --check ({was} now): would replace files on {len(files)} host(s)"
        + (f" ({', '.join(files)})" if files else "")
        + f" and restart serving on {len(serving)}; nothing changed"
    )
    return Exit.OK


def _record_flip(target: Target, plan: Plan, mode: spark.LinkSpeed, names: list[str] | None, hosts: list[str]) -> None:
    """What the hosts run now becomes the recorded speed (and the lab's shaped rate)."""
    if target.lab is not None:
        # the lab's link speed is a shaped rate, the hardware's part of the flip
        from sparkfab.lab import wire
        from sparkfab.lab.spec import spec as lab_spec

        _err.print(wire.link_speed(lab_spec(plan), mode, None if names is None else set(hosts)))
    save_speeds(target, plan, mode, names)


def _roll_back(target: Target, before: Plan, result: RunResult, args: argparse.Namespace, was: str) -> None:
    """A flip that failed in its push: the hosts it changed get their old files back (serving
    was not touched), so that every host runs the recorded speed again; says which way it ended."""
    changed = sorted(h.host for h in result.hosts.values() if h.changed)
    if not changed:
        _err.print(f"linkspeed {args.mode} changed nothing: every host is checked before any host changes")
        return
    _err.print(f"linkspeed {args.mode} failed after it changed {', '.join(changed)}: rolling them back to {was}")
    back = argparse.Namespace(**{**vars(args), "limit": ",".join(changed)})
    undo = run_with_progress(
        "linkspeed.yml", target, target.render(before), back, {"sparkfab_serve_action": "none"}, plan=before
    )
    if undo.failures:
        left = sorted(h.host for h in undo.failures)
        _err.print(
            f"linkspeed {args.mode} stopped part-way: the roll-back failed on {', '.join(left)}, which may run "
            f"{args.mode} while the recorded speed is {was}. Run `sparkfab linkspeed` again once every host "
            "answers: it converges."
        )
    else:
        _err.print(f"linkspeed {args.mode} rolled back: {', '.join(changed)} run {was} again, as recorded")


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=("start", "stop", "restart", "status"),
        help="start, stop or restart serving, in order; status: each rank's engine (changes nothing)",
    )
    add_target(p)
    p.add_argument("--instance", metavar="NAME", help="only this instance (its hosts; the others keep serving)")
    add_changes(
        p,
        limit="only these hosts (Ansible pattern; with --instance, both must match)",
        check="say where it would stop and start engines; change nothing",
    )
    add_format(p)


def serve_cmd(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    with Target.held(args.inventory, f"serve {args.action}", lab=args.lab) as target:
        return _serve(target, args)


def _serve(target: Target, args: argparse.Namespace) -> int:
    args.limit = instance_limit(target.plan, args.instance, args.limit)
    tree = target.render()  # what serving starts is what the inventory says now
    args.limit = files_here(args.limit)
    _confirm(target, args, f"serve {args.action}", selected(target.plan, tree, args.limit))
    result = run_with_progress("serve.yml", target, tree, args, {"sparkfab_serve_action": args.action})
    _fail_if(result, target.plan)
    if args.check:
        stop, start = (
            _passed_over(result, "Serve | Stop the engine", "Serve | Remove the engine"),
            _passed_over(result, "Serve | Start the engine"),
        )
        _err.print(
            f"serve {args.action} --check: would stop the engine on {len(stop)} host(s)"
            + (f" ({', '.join(stop)})" if stop else "")
            + f" and start it on {len(start)}"
            + (f" ({', '.join(start)})" if start else "")
            + "; nothing changed"
        )
    return Exit.OK


def _passed_over(result: RunResult, *tasks: str) -> list[str]:
    """The hosts on which --check passed over a task starting with one of `tasks` (a command's
    task is not run in check mode): where a real run would do it."""
    return sorted(h.host for h in result.hosts.values() if any(t.startswith(tasks) for t in h.skipped_tasks))


def _status(args: argparse.Namespace) -> int:
    """Each rank's engine as its host says: running (since), dead (when, how), stopped; exit 4
    when an instance is degraded (some ranks run, some do not)."""
    from sparkfab.verify import serving

    target = Target.load(args.inventory, lab=args.lab)
    instance_limit(target.plan, args.instance, None)  # an unknown instance is refused here
    conn = target.connection("serve")
    remotes = {h.name: conn.remote(h.name) for h in target.plan.hosts}
    states = serving.rank_states(target.plan, remotes, args.instance)
    names = list(dict.fromkeys(s.instance for s in states))
    summaries = {n: serving.summary([s for s in states if s.instance == n]) for n in names}
    if args.format == "json":
        doc = {
            "cluster": target.plan.cluster,
            "instances": {
                n: {"state": summaries[n], "ranks": [s.to_dict() for s in states if s.instance == n]} for n in names
            },
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        t = Table(title=f"serving on {target.plan.cluster}")
        for col in ("instance", "rank", "host", "runtime", "state", "since", "detail"):
            t.add_column(col)
        colour = {"running": "green", "dead": "red", "unknown": "red", "stopped": "yellow"}
        for s in states:
            t.add_row(
                s.instance,
                str(s.rank),
                s.host,
                s.runtime,
                Text(s.state, style=colour[s.state]),
                s.since,
                Text(s.detail),
            )
        Console(width=160).print(t)
        for n in names:
            sys.stdout.write(f"{n}: {summaries[n]}\n")
    return Exit.CHECK if "degraded" in summaries.values() else Exit.OK


def _reset_args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_changes(
        p, check="change nothing; report what would be removed", diff="show the files that would go or come back"
    )


def reset_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "reset", lab=args.lab) as target:
        return _reset(target, args)


def _reset(target: Target, args: argparse.Namespace) -> int:
    plan = target.plan
    tree = target.render()  # the hosts' netdevs and instances, as the plays read them
    args.limit = files_here(args.limit)
    _confirm(target, args, "reset", selected(target.plan, tree, args.limit))
    result = run_with_progress("reset.yml", target, tree, args)
    if (args.diff or args.check) and result.diffs:
        sys.stdout.write("".join(result.diffs))
    _fail_if(result, target.plan)
    if not args.check and not args.limit:
        forget_speeds(target)
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
    Verb("serve", "Start or stop serving: workers first, rank 0 last, then a health wait.", _serve_args, serve_cmd),
    Verb(
        "reset",
        "Undo apply: stop serving, remove what sparkfab installed, restore what it moved aside (--check --diff).",
        _reset_args,
        reset_cmd,
    ),
)
