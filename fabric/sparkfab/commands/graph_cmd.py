"""`sparkfab graph`: the cluster as a picture (SVG through Graphviz's `dot`, or the DOT text)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from sparkfab import spark
from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_inventory
from sparkfab.errors import Exit, Unavailable, UsageError
from sparkfab.files.outputs import check_file, write_file
from sparkfab.render import graph
from sparkfab.resolve import load_plan


def _args(p: argparse.ArgumentParser) -> None:
    add_inventory(p)
    p.add_argument("--verify", metavar="RESULT", help="colour each cable by `verify --format json`'s result file")
    p.add_argument("--link-speed", choices=spark.LINK_SPEEDS, help="the picture at this link speed")
    p.add_argument("--format", choices=("svg", "dot"), default="svg", help="svg for people (default), dot for programs")
    p.add_argument("-o", "--output", type=at.file_path, help="write the picture to this file (default stdout)")


def _results(path: str) -> dict[tuple[str, str], graph.Verdict]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"--verify {path}: not verify's JSON ({exc})") from None
    rows = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise UsageError(f"--verify {path}: no results list (write it with `sparkfab verify --format json`)")
    return graph.verdicts(r for r in rows if isinstance(r, dict))


def svg(text: str) -> bytes:
    """DOT laid out and drawn by Graphviz."""
    dot = shutil.which("dot")
    if dot is None:
        raise Unavailable("Graphviz's dot is missing: apt-get install graphviz (or --format dot)")
    res = subprocess.run([dot, "-Tsvg"], input=text.encode(), capture_output=True, timeout=120, check=False)
    if res.returncode != 0:
        raise Unavailable(f"dot failed: {res.stderr.decode(errors='replace').strip()[:300]}")
    return res.stdout


def graph_cmd(args: argparse.Namespace) -> int:
    out = check_file(args.output, [args.inventory]) if args.output else None
    plan = load_plan(args.inventory, args.link_speed)
    text = graph.dot(plan, _results(args.verify) if args.verify else None)
    data = text.encode() if args.format == "dot" else svg(text)
    if out:
        write_file(out, data)
        if not args.quiet:
            sys.stderr.write(f"drew {plan.cluster} ({len(plan.hosts)} Sparks) into {out}\n")
    elif args.format == "dot" or not hasattr(sys.stdout, "buffer"):
        sys.stdout.write(data.decode())
    else:
        sys.stdout.buffer.write(data)
    return Exit.OK


VERBS = (
    Verb(
        "graph",
        "Draw the cluster: each Spark's ports and twins, each cable's rail and subnet, coloured by a verify result.",
        _args,
        graph_cmd,
    ),
)
