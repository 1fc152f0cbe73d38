"""`sparkfab verify`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_all_rows, add_check_limit, add_format, add_target, emit_json
from sparkfab.commands.tables import print_report
from sparkfab.errors import Exit, UsageError
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import Result
from sparkfab.verify.run import verify


def _args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_format(p)
    p.add_argument("--collective", action="store_true", help="run a torch.distributed all-reduce across all ranks")
    p.add_argument("--perf", action="store_true", help="ib_write_bw/ib_write_lat per rail, all_reduce_perf (hardware)")
    p.add_argument("--sizes", default="4K,256K,4M,16M", help="collective sweep sizes")
    p.add_argument(
        "--expectations",
        action="store_true",
        help="print what the checks expect at each link-speed mode (200, 100e, 100) and contact no host",
    )
    add_check_limit(p)
    add_all_rows(p)


def verify_cmd(args: argparse.Namespace) -> int:
    if args.expectations:
        return _expectations(args)
    target = Target.load(args.inventory, lab=args.lab)
    only = target.limited(args.limit)
    if only is not None and args.perf:
        raise UsageError("--perf measures every rail and instance: run it without --limit")
    report = verify(
        target.plan,
        collective=args.collective,
        perf=args.perf,
        sizes=args.sizes,
        conn=target.connection("verify"),
        log=(lambda line: None) if args.quiet else _log,
        only=only,
    )
    report.results = [
        _seen(target, r) if r.check == Check.SSH and r.actual == "unreachable" else r for r in report.results
    ]
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_report(report, args.all)
    return Exit.OK if report.ok else Exit.CHECK


def _seen(target: Target, r: Result) -> Result:
    why = target.unreachable_why(r.host)
    return dataclasses.replace(r, detail=f"{r.detail}; the lab's view: {why}") if why else r


def _expectations(args: argparse.Namespace) -> int:
    """The hardware expectations of every mode side by side, the inventory's marked."""
    from rich.console import Console
    from rich.table import Table

    from sparkfab.resolve import load_plan
    from sparkfab.spark import LINK_SPEEDS
    from sparkfab.verify.expect import table

    plan = load_plan(args.inventory)
    rows = table()
    if args.format == "json":
        emit_json({"cluster": plan.cluster, "link_speed": plan.link_speed, "modes": list(LINK_SPEEDS), "rows": rows})
        return Exit.OK
    t = Table(title=f"verify expects, per link-speed mode ({plan.cluster} runs at {plan.link_speed})")
    t.add_column("check")
    for m in LINK_SPEEDS:
        t.add_column(f"[bold]{m}[/] (this cluster)" if m == plan.link_speed else m, justify="right")
    for row in rows:
        t.add_row(*row)
    Console(width=160).print(t)
    return Exit.OK


def _log(line: str) -> None:
    sys.stderr.write(line + "\n")


VERBS = (
    Verb(
        "verify",
        "Check the fabric before serving: links, addresses, cabling, reachability, collectives.",
        _args,
        verify_cmd,
    ),
)
