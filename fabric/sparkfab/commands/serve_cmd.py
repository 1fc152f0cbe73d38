"""`sparkfab serve start|stop|restart|status`: serving in the order the launch files say, and
each rank's engine as its host says."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparkfab.cluster.limits import files_here, instance_limit, selected
from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_changes, add_format, add_target
from sparkfab.commands.runs import confirm, fail_if, passed_over, run_options, run_with_progress, say_said
from sparkfab.errors import Exit
from sparkfab.push import tasks

_err = Console(stderr=True, width=140)


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
        starts_engines=True,
    )
    add_format(p)


def serve_cmd(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    with Target.held(args.inventory, f"serve {args.action}", lab=args.lab) as target:
        return _serve(target, args)


def _serve(target: Target, args: argparse.Namespace) -> int:
    tree = target.render()  # what serving starts is what the inventory says now
    limit = files_here(instance_limit(target.plan, args.instance, args.limit))
    opts = run_options(args)
    confirm(target, args, f"serve {args.action}", selected(target.plan, tree, limit))
    result = run_with_progress("serve.yml", target, tree, opts, {"sparkfab_serve_action": args.action}, limit=limit)
    fail_if(result, target)
    say_said(result)
    if args.check:
        stop, start = (
            passed_over(result, *tasks.SERVE_STOP),
            passed_over(result, tasks.SERVE_START),
        )
        _err.print(
            f"serve {args.action} --check: would stop the engine on {len(stop)} host(s)"
            + (f" ({', '.join(stop)})" if stop else "")
            + f" and start it on {len(start)}"
            + (f" ({', '.join(start)})" if start else "")
            + "; nothing changed"
        )
    return Exit.OK


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


VERBS = (
    Verb("serve", "Start or stop serving: workers first, rank 0 last, then a health wait.", _serve_args, serve_cmd),
)
