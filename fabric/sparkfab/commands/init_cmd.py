"""`sparkfab init`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb
from sparkfab.errors import Exit
from sparkfab.starter import TOPOLOGIES, starter


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", choices=TOPOLOGIES, help="pair: two Sparks, one cable; ring: switchless; switch: CRS804")
    p.add_argument("--sparks", type=at.integer(2, 16), help="how many Sparks (pair 2, ring 4, switch 8 by default)")
    p.add_argument("--cluster", help="the cluster's name (default: pair, ringN or swN)")
    p.add_argument("-o", "--output", type=at.file_path, help="write to this new file (default: stdout)")


def init_cmd(args: argparse.Namespace) -> int:
    from sparkfab.outputs import check_file, write_file
    from sparkfab.resolve import load_plan

    text = starter(args.topology, args.sparks, args.cluster)
    out = check_file(args.output, ours=None) if args.output else None
    with tempfile.TemporaryDirectory() as tmp:  # valid before it is written (a bad --cluster is named here)
        (Path(tmp) / "inventory.yml").write_text(text)
        plan = load_plan(str(Path(tmp) / "inventory.yml"))
    if out is None:
        sys.stdout.write(text)
        return Exit.OK
    write_file(out, text)
    sys.stderr.write(f"wrote {out}: {len(plan.hosts)} Sparks, {len(plan.rails)} rails; next: sparkfab validate {out}\n")
    return Exit.OK


VERBS = (
    Verb("init", "Write a commented starter inventory for a pair, a switchless ring or a switch.", _args, init_cmd),
)
