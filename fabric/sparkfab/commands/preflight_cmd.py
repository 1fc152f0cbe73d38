"""`sparkfab preflight`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_all_rows, add_check_limit, add_format, add_target
from sparkfab.commands.tables import print_report
from sparkfab.errors import Exit
from sparkfab.verify.preflight import preflight


def _args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_format(p)
    add_check_limit(p)
    add_all_rows(p)


def preflight_cmd(args: argparse.Namespace) -> int:
    target = Target.load(args.inventory, lab=args.lab)
    t0 = time.perf_counter()
    say = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    report = preflight(target.plan, target.connection("preflight"), say, target.limited(args.limit))
    report.timing["total_s"] = round(time.perf_counter() - t0, 2)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_report(report, args.all, "preflight")
    return Exit.OK if report.ok else Exit.CHECK


VERBS = (
    Verb(
        "preflight",
        "Read-only checks before apply: ssh and sudo, netdevs, RDMA, other netplan files, Docker, image, model, ports.",
        _args,
        preflight_cmd,
    ),
)
