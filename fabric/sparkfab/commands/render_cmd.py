"""`sparkfab render`."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from sparkfab import spark
from sparkfab.assets import shipped
from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_inventory
from sparkfab.errors import Exit
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan


def _args(p: argparse.ArgumentParser) -> None:
    add_inventory(p)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        type=at.path,
        help="directory for the per-host tree (new, empty or an earlier one)",
    )
    p.add_argument("--link-speed", choices=spark.LINK_SPEEDS, help="override the inventory's link_speed")
    p.add_argument("--nccl-graph", action="store_true", help="also write an NCCL ring graph (NCCL_GRAPH_FILE)")


def render_cmd(args: argparse.Namespace) -> int:
    plan = load_plan(args.inventory, args.link_speed)
    if args.nccl_graph:
        plan = dataclasses.replace(plan, nccl_graph=True)
    tree = render(plan, shipped())
    for w in tree.warnings:
        sys.stderr.write(f"warning: {w}\n")
    written = write_tree(tree, args.output, [args.inventory])
    if not args.quiet:
        sys.stderr.write(
            f"rendered {len(written)} files for {len(tree.hosts)} hosts of {plan.cluster} "
            f"(link {plan.link_speed}) into {args.output}\n"
        )
    return Exit.OK


VERBS = (
    Verb(
        "render",
        "Generate every host's configuration into DIR/<host>/etc/... plus an Ansible inventory.",
        _args,
        render_cmd,
    ),
)
