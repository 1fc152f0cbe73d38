"""`sparkfab verify`."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from sparkfab.cli import command
from sparkfab.commands.deploy_cmds import at_current_speed, inventory_path, plan_state_dir
from sparkfab.errors import Exit
from sparkfab.target import load as load_target
from sparkfab.verify.result import Report
from sparkfab.verify.run import verify


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--collective", action="store_true", help="run a torch.distributed all-reduce across all ranks")
    p.add_argument("--perf", action="store_true", help="ib_write_bw/ib_write_lat per rail, all_reduce_perf (hardware)")
    p.add_argument("--sizes", default="4K,256K,4M,16M", help="collective sweep sizes")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("--all", action="store_true", help="table: also list passing checks")


@command("verify", "Check the fabric before serving: links, addresses, cabling, reachability, collectives.", _args)
def verify_cmd(args: argparse.Namespace) -> int:
    plan = at_current_speed(load_target(inventory_path(args)))
    report = verify(
        plan,
        collective=args.collective,
        perf=args.perf,
        sizes=args.sizes,
        workdir=plan_state_dir(plan) / "verify",
        log=_log,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_report(report, args.all)
    return Exit.OK if report.ok else Exit.CHECK


def _log(line: str) -> None:
    sys.stderr.write(line + "\n")


def print_report(report: Report, show_all: bool, verb: str = "verify") -> None:
    """Failed rows (and with preflight also warnings and "not in lab"), or every row with --all."""
    console = Console(width=170)
    d = report.to_dict()
    t = Table(title=f"{verb} {report.cluster} (link {report.link_speed})")
    for col in ("check", "host", "subject", "expected", "actual", "status", "detail"):
        t.add_column(col, overflow="fold")
    for r in report.results:
        if r.status == "fail" or show_all or (verb != "verify" and r.status != "pass"):
            color = {"pass": "green", "fail": "red", "skip": "yellow", "warn": "magenta"}[r.status]
            t.add_row(r.check, r.host, r.subject, r.expected, r.actual, f"[{color}]{r.status}[/]", r.detail)
    if t.row_count:
        console.print(t)
    for name, c in (report.collective or {}).items():
        console.print(
            f"collective {name} ({c['backend']}, {c['world_size']} ranks): {'correct' if c['ok'] else 'FAILED'}"
        )
        ct = Table()
        for col in ("bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
            ct.add_column(col, justify="right")
        for row in c["sweep"]:
            ct.add_row(
                str(row["bytes"]), f"{row['time_us']:.1f}", f"{row['algbw_GBps']:.4f}", f"{row['busbw_GBps']:.4f}"
            )
        console.print(ct)
    c = d["counts"]
    console.print(
        f"{'PASS' if report.ok else 'FAIL'}: {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped"
        + (f", {c['warn']} warning(s)" if c.get("warn") else "")
        + f" in {report.timing.get('total_s', 0):.1f} s"
    )
