"""`sparkfab render`."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from sparkfab.cli import command
from sparkfab.commands import argtypes as at
from sparkfab.errors import Exit
from sparkfab.render.tree import render
from sparkfab.target import load as load_target
from sparkfab.writer import assets, write_tree


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        type=at.path,
        help="directory for the per-host tree (new, empty or an earlier one)",
    )
    p.add_argument("--link-speed", choices=("200", "100e", "100"), help="override the inventory's link_speed")
    p.add_argument("--nccl-graph", action="store_true", help="also write an NCCL ring graph (NCCL_GRAPH_FILE)")


def render_plan(inventory: str, link_speed: str | None = None, graph: bool = False):  # type: ignore[no-untyped-def]
    plan = load_target(inventory, link_speed)
    if graph:
        plan = dataclasses.replace(plan, nccl_graph=True)
    return plan


@command("render", "Generate every host's configuration into DIR/<host>/etc/... plus an Ansible inventory.", _args)
def render_cmd(args: argparse.Namespace) -> int:
    plan = render_plan(args.inventory, args.link_speed, args.nccl_graph)
    tree = render(plan, assets())
    for w in tree.warnings:
        sys.stderr.write(f"warning: {w}\n")
    written = write_tree(tree, args.output, [args.inventory])
    if not args.quiet:
        sys.stderr.write(
            f"rendered {len(written)} files for {len(tree.hosts)} hosts of {plan.cluster} "
            f"(link {plan.link_speed}) into {args.output}\n"
        )
    return Exit.OK
