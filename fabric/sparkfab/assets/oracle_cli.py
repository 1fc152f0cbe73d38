"""What the engine oracles (`vllm_oracle.py`, `sglang_oracle.py`) share: the rows of a flag table
read from an argparse parser, writing or checking the table file, and their two verbs (`flags
--out FILE [--check]`, `check` on stdin). Standard library only: it runs in each engine's Python,
which has no sparkfab installed (the oracles find it beside themselves)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: argparse actions that take no value
SWITCH_ACTIONS = ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction")


def table_text(parser: argparse.ArgumentParser, takes: Callable[[Any], str], header: str, release: str) -> str:
    """The flag table: the header, `# <dist> <version>`, then per option string a tab-separated
    line of the string, what it takes (a `--no-` form of a bool is a switch) and its choices
    (a set's in sorted order, so that the table does not change between runs)."""
    rows = []
    for a in parser._actions:
        kind = takes(a)
        options = a.choices or ()
        choices = ",".join(sorted(map(str, options)) if isinstance(options, set | frozenset) else map(str, options))
        for s in a.option_strings:
            if s.startswith("--") and s != "--help":
                no_form = kind == "bool" and s.startswith("--no-")
                rows.append("\t".join(x for x in (s, "switch" if no_form else kind, choices) if x))
    return header + f"# {release}\n" + "".join(r + "\n" for r in sorted(rows))


def write_or_check(out: Path, new: str, header: str, check: bool) -> int:
    """Write the table to `out`; with `check`, exit 1 (saying what differs) when `out` is not it."""
    if check:
        old = out.read_text() if out.exists() else ""
        if old != new:
            gone = sorted(set(old.splitlines()) - set(new.splitlines()))
            added = sorted(set(new.splitlines()) - set(old.splitlines()))
            sys.stderr.write(f"stale: {len(added)} line(s) to add {added[:5]}, {len(gone)} to drop {gone[:5]}\n")
            return 1
        return 0
    out.write_text(new)
    sys.stderr.write(f"wrote {out} ({new.count(chr(10)) - header.count(chr(10)) - 1} option strings)\n")
    return 0


def parse_quietly(parser: argparse.ArgumentParser, args: list[str]) -> tuple[argparse.Namespace | None, str]:
    """`args` as the engine's parser reads them: (namespace, "") or, where it refuses them (an
    argparse exit), (None, the last line it wrote to stderr: its reason)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(args), ""
    except SystemExit:
        return None, last_line(err.getvalue()) or "exit"


def last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def main(
    doc: str | None,
    flags_text: Callable[[], str],
    header: str,
    check_one: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    version: Callable[[], str],
) -> int:
    """The oracle's command line: `flags --out FILE [--check]`, or `check` (launches on stdin,
    one JSON line of results on stdout)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else "")
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("flags")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--check", action="store_true")
    sub.add_parser("check")
    args = p.parse_args()
    if args.what == "flags":
        return write_or_check(args.out, flags_text(), header, args.check)
    results = check_one(json.load(sys.stdin)["launches"])
    sys.stdout.write(json.dumps({"version": version(), "results": results}) + "\n")
    return 0
