"""`sparkfab validate` and `sparkfab plan`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format, add_inventory, emit_json
from sparkfab.errors import Exit
from sparkfab.plan import Plan
from sparkfab.resolve import load_plan
from sparkfab.spark import SPEEDS

if TYPE_CHECKING:
    from sparkfab.oracle import Known


def _inventory_arg(p: argparse.ArgumentParser) -> None:
    add_inventory(p)


def _format_arg(p: argparse.ArgumentParser) -> None:
    _inventory_arg(p)
    add_format(p)


def _validate_args(p: argparse.ArgumentParser) -> None:
    _inventory_arg(p)
    p.add_argument(
        "more",
        metavar="INVENTORY",
        nargs="*",
        help="more inventories, each checked in turn (each engine's parser starts once for all of them)",
    )


def validate(args: argparse.Namespace) -> int:
    if not args.more:
        return _validate(args.inventory, load_plan(args.inventory), args.quiet)
    from sparkfab import oracle
    from sparkfab.errors import InventoryError, readable

    plans, failed = {}, 0
    for source in [args.inventory, *args.more]:
        try:
            plans[source] = load_plan(source)
        except InventoryError as exc:
            sys.stderr.write(readable(exc.render()) + "\n")
            failed = exc.exit_code
    known = oracle.prefetch(list(plans.values()), None if args.quiet else _note)
    for source, plan in plans.items():
        try:
            _validate(source, plan, args.quiet, known)
        except InventoryError as exc:
            sys.stderr.write(readable(exc.render()) + "\n")
            failed = exc.exit_code
    return failed or Exit.OK


def _validate(source: str, plan: Plan, quiet: bool, known: Known | None = None) -> int:
    """One inventory's plan judged by its engines' parsers, its warnings and notes, and a line."""
    from sparkfab import oracle
    from sparkfab.render.nccl import warnings

    verdict = oracle.check(plan, None if quiet else _note, known)
    recipes = {i.recipe.name: i.recipe for i in plan.instances if i.recipe is not None}
    notes = [n for r in recipes.values() for n in r.notes()]
    memory = [f"instance {i.name}: {m}" for i in plan.instances for m in i.memory]
    for w in [] if quiet else [*warnings(plan), *notes, *memory]:
        sys.stderr.write(f"warning: {w}\n")
    n_if = sum(len(h.ifaces) for h in plan.hosts)
    if not quiet:
        if plan.left_out:
            shown = ", ".join(plan.left_out[:10]) + (
                f" and {len(plan.left_out) - 10} more" if len(plan.left_out) > 10 else ""
            )
            _note(f"not in the cluster (no cable, no instance, or outside its group), left alone: {shown}")
        for inst in plan.instances:
            if inst.tp_unchecked:
                _note(f"instance {inst.name}: {inst.tp_unchecked}")
        judged = f"; every launch parsed by {verdict.version}" if verdict.version else ""
        sys.stderr.write(
            f"{source}: valid — {len(plan.hosts)} Sparks, {len(plan.rails)} rails, "
            f"{n_if} fabric interfaces, {len(plan.instances)} instance(s){judged}\n"
        )
    return Exit.OK


def _note(text: str) -> None:
    sys.stderr.write(f"note: {text}\n")


def plan_cmd(args: argparse.Namespace) -> int:
    plan = load_plan(args.inventory)
    if args.format == "json":
        emit_json(plan.to_dict())
    else:
        print_plan(plan, Console(width=160))
    return Exit.OK


def link_text(plan: Plan) -> str:
    """The link-speed mode in words, with what mode 100 means on this cluster's cables: a 100G
    breakout lane on a switch, a 100G (QSFP28) cable between two Sparks."""
    text = f"{plan.link_speed} ({SPEEDS[plan.link_speed].text})"
    if plan.link_speed != "100":
        return text
    kinds = sorted(
        {"100G (QSFP28) cables between Sparks" if r.switch is None else "100G breakout lanes" for r in plan.rails}
    )
    return f"{text}: {' and '.join(kinds)}" if kinds else text


def print_plan(plan: Plan, console: Console) -> None:
    console.print(
        f"[bold]{plan.cluster}[/]: link {link_text(plan)}, MTU {plan.mtu}, rails /"
        f"{plan.rail_prefix}, control plane {plan.control_plane}"
    )
    if plan.left_out:
        console.print(f"not in the cluster, left alone: {', '.join(plan.left_out)}", markup=False)
    for inst in plan.instances:
        t = Table(title=f"instance {inst.name}: {inst.topology}, TP{inst.tp}, master {inst.master_addr}")
        for col in ("rank", "host", "prev", "next"):
            t.add_column(col)
        for r in inst.ranks:
            t.add_row(
                str(r.rank),
                r.host,
                f"{r.prev_host or '-'} via {r.prev_port or '-'}",
                f"{r.next_host or '-'} via {r.next_port or '-'}",
            )
        console.print(t)
    t = Table(title="fabric interfaces")
    for col in ("host", "netdev", "rdma", "rail", "address", "peer"):
        t.add_column(col)
    for h in plan.hosts:
        for i in h.ifaces:
            peer = f"{i.peer_host}:{i.peer_port} {i.peer_address}" if i.peer_host else f"{i.switch}:{i.switch_port}"
            t.add_row(h.name, i.netdev, i.rdma, i.rail, i.address, peer)
    console.print(t)
    t = Table(title="NCCL_IB_HCA and control plane")
    for col in ("host", "200", "100e", "control", "routes"):
        t.add_column(col)
    for h in plan.hosts:
        t.add_row(
            h.name,
            ",".join(h.hca["200"]),
            ",".join(h.hca["100e"]),
            f"{h.control_if} {h.control_address}",
            str(len(h.routes)),
        )
    console.print(t)


def _schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        type=at.file_path,
        help="write here instead of stdout (new, or an earlier schema; inventory/schema.json)",
    )


def _is_schema(path: Path) -> bool:
    """An earlier `sparkfab schema` output, which may be replaced."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("title") == "sparkfab inventory"


def schema_cmd(args: argparse.Namespace) -> int:
    from sparkfab.schema import schema_text

    if args.output:
        from sparkfab.files.outputs import check_file, write_file

        out = check_file(args.output, ours=_is_schema)
        write_file(out, schema_text())
    else:
        sys.stdout.write(schema_text())
    return Exit.OK


VERBS = (
    Verb(
        "validate",
        "Check an inventory: every problem at once (exit 2), or nothing (exit 0).",
        _validate_args,
        validate,
    ),
    Verb("plan", "Resolve an inventory: ranks, rails, subnets, addresses, peers, HCA lists.", _format_arg, plan_cmd),
    Verb("schema", "Print the inventory's JSON Schema (generated from the model).", _schema_args, schema_cmd),
)
