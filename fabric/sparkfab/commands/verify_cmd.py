"""`sparkfab verify`."""

from __future__ import annotations

import argparse
import json
import sys

from sparkfab.commands.common import Verb, add_all_rows, add_format, add_target
from sparkfab.commands.tables import print_report
from sparkfab.errors import Exit
from sparkfab.target import Target
from sparkfab.verify.run import verify


def _args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_format(p)
    p.add_argument("--collective", action="store_true", help="run a torch.distributed all-reduce across all ranks")
    p.add_argument("--perf", action="store_true", help="ib_write_bw/ib_write_lat per rail, all_reduce_perf (hardware)")
    p.add_argument("--sizes", default="4K,256K,4M,16M", help="collective sweep sizes")
    add_all_rows(p)


def verify_cmd(args: argparse.Namespace) -> int:
    target = Target.load(args.inventory, lab=args.lab)
    report = verify(
        target.plan,
        collective=args.collective,
        perf=args.perf,
        sizes=args.sizes,
        conn=target.connection("verify"),
        lab=target.lab,
        log=_log,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_report(report, args.all)
    return Exit.OK if report.ok else Exit.CHECK


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
