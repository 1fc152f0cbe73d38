"""`sparkfab init`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb
from sparkfab.errors import Exit, SparkfabError
from sparkfab.starter import SIZES, TOPOLOGIES, sizes_help, starter, unedited


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", choices=TOPOLOGIES, help="pair: two Sparks, one cable; ring: switchless; switch: CRS804")
    least = min(lo for lo, _, _ in SIZES.values())
    most = max(hi for _, hi, _ in SIZES.values())
    p.add_argument("--sparks", type=at.integer(least, most), help=sizes_help())
    p.add_argument("--cluster", help="the cluster's name (default: pair, ringN or swN)")
    p.add_argument("-o", "--output", type=at.file_path, help="write to this new file (default: stdout)")


def _unedited(path: Path) -> bool:
    """A file `init` wrote and nobody has changed since (it may be replaced)."""
    from sparkfab.files import userfile

    try:
        return unedited(userfile.read_bytes(path, "-o").decode("utf-8"))
    except (UnicodeDecodeError, SparkfabError):
        return False


def init_cmd(args: argparse.Namespace) -> int:
    from sparkfab.files.outputs import check_file, write_file
    from sparkfab.resolve import load_plan

    text = starter(args.topology, args.sparks, args.cluster)
    out = check_file(args.output, ours=_unedited) if args.output else None
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
