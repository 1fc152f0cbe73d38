"""SGLang's own judgement of a launch, run with the Python of an SGLang install
(`.venv-sglang/bin/python`, made by scripts/setup.sh; sparkfab finds it through `sparkfab.oracle`).
Self-contained: it imports SGLang, never sparkfab. The same two verbs as vllm_oracle.py:

    sglang_oracle.py flags --out FILE [--check]
        write the flag table of `python -m sglang.launch_server` (every option string, what it
        takes, its choices) from SGLang's parser; --check: exit 1 when FILE is stale
    sglang_oracle.py check
        read {"launches": [{"argv": [...], "model_dir": DIR or null}, ...]} on stdin; print
        {"version": V, "results": [{"ok", "error"}, ...]} as one JSON line. Each argv (starting
        `python3 -m sglang.launch_server`) goes through SGLang's parser and the server
        arguments it builds from it (`ServerArgs.from_cli_args`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import io
import json
import sys
from pathlib import Path
from typing import Any

MODULE = "sglang.launch_server"
HEADER = (
    "# The flags of `python -m sglang.launch_server`, generated from SGLang's own argument parser\n"
    "# by fabric/sparkfab/assets/sglang_oracle.py: option string, what it takes (switch: nothing;\n"
    "# bool: nothing, with a --no- form; int, float, size, json, list, text) and its choices.\n"
    "# `sparkfab validate` checks flags against it when SGLang itself is not installed.\n"
)
_TYPES = {"int": "int", "float": "float", "str": "text", "human_readable_int": "size", "loads": "json"}


def version() -> str:
    try:
        return md.version("sglang").split("+")[0]
    except md.PackageNotFoundError:
        raise SystemExit("no SGLang distribution in this Python") from None


def serve_parser() -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog=MODULE)
    ServerArgs.add_cli_args(parser)
    return parser


def _takes(action: Any) -> str:
    kind = type(action).__name__
    if kind == "BooleanOptionalAction":
        return "bool"
    if kind in ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction") or action.nargs == 0:
        return "switch"
    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return "list"
    return _TYPES.get(getattr(action.type, "__name__", ""), "text")


def flags_text() -> str:
    rows = []
    for a in serve_parser()._actions:
        takes = _takes(a)
        choices = ",".join(sorted(str(c) for c in a.choices)) if a.choices else ""  # some are sets
        for s in a.option_strings:
            if s.startswith("--") and s != "--help":
                no_form = takes == "bool" and s.startswith("--no-")
                rows.append("\t".join(x for x in (s, "switch" if no_form else takes, choices) if x))
    return HEADER + f"# sglang {version()}\n" + "".join(r + "\n" for r in sorted(rows))


def flags(out: Path, check: bool) -> int:
    new = flags_text()
    if check:
        old = out.read_text() if out.exists() else ""
        if old != new:
            gone = sorted(set(old.splitlines()) - set(new.splitlines()))
            added = sorted(set(new.splitlines()) - set(old.splitlines()))
            sys.stderr.write(f"stale: {len(added)} line(s) to add {added[:5]}, {len(gone)} to drop {gone[:5]}\n")
            return 1
        return 0
    out.write_text(new)
    sys.stderr.write(f"wrote {out} ({new.count(chr(10)) - HEADER.count(chr(10)) - 1} option strings)\n")
    return 0


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def check_one(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    """The argv as `python -m sglang.launch_server` reads it, then the server arguments it makes."""
    if len(argv) < 3 or argv[1:3] != ["-m", MODULE]:
        return {"ok": False, "error": f"not a `python -m {MODULE}` command: {argv[:3]}"}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(argv[3:])
    except SystemExit:
        return {"ok": False, "error": _last_line(err.getvalue()) or "exit"}
    from sglang.srt.server_args import ServerArgs

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ServerArgs.from_cli_args(ns)
    except Exception as exc:  # SGLang's own refusal, in its own words
        return {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:600]}
    return {"ok": True, "error": ""}


def check() -> int:
    request = json.load(sys.stdin)
    parser = serve_parser()
    results = [check_one(parser, list(x["argv"])) for x in request["launches"]]
    sys.stdout.write(json.dumps({"version": version(), "results": results}) + "\n")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("flags")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--check", action="store_true")
    sub.add_parser("check")
    args = p.parse_args()
    return flags(args.out, args.check) if args.what == "flags" else check()


if __name__ == "__main__":
    raise SystemExit(main())
