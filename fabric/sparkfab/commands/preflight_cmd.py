"""`sparkfab preflight`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from sparkfab.cli import command
from sparkfab.commands.deploy_cmds import at_current_speed, inventory_path, plan_state_dir
from sparkfab.commands.verify_cmd import print_report
from sparkfab.errors import Exit
from sparkfab.preflight import preflight
from sparkfab.target import load as load_target


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--lab", action="store_true", help="use the lab inventory of this cluster")
    p.add_argument("--all", action="store_true", help="table: also list passing checks")


@command(
    "preflight",
    "Read-only checks before apply: ssh and sudo, netdevs, RDMA, other netplan files, Docker, image, model, ports.",
    _args,
)
def preflight_cmd(args: argparse.Namespace) -> int:
    plan = at_current_speed(load_target(inventory_path(args)))
    t0 = time.perf_counter()
    report = preflight(plan, plan_state_dir(plan) / "preflight", bool(plan.group_vars.get("sparkfab_lab")))
    report.timing["total_s"] = round(time.perf_counter() - t0, 2)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_report(report, args.all, "preflight")
    return Exit.OK if report.ok else Exit.CHECK
