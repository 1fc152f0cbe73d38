"""SGLang's own judgement of a launch, run with the Python of an SGLang install
(`.venv-sglang/bin/python`, made by scripts/setup.sh; sparkfab finds it through `sparkfab.oracle`).
It imports SGLang and, of sparkfab, only `assets/oracle_cli.py` (standard library), found beside
it. The same two verbs as vllm_oracle.py:

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
import sys
from pathlib import Path
from typing import Any

if not __package__:  # run as a script in SGLang's Python, which has no sparkfab: the package beside it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from sparkfab.assets import oracle_cli

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
    if kind in oracle_cli.SWITCH_ACTIONS or action.nargs == 0:
        return "switch"
    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return "list"
    return _TYPES.get(getattr(action.type, "__name__", ""), "text")


def flags_text() -> str:
    return oracle_cli.table_text(serve_parser(), _takes, HEADER, f"sglang {version()}")


def check_one(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    """The argv as `python -m sglang.launch_server` reads it, then the server arguments it makes."""
    if len(argv) < 3 or argv[1:3] != ["-m", MODULE]:
        return {"ok": False, "error": f"not a `python -m {MODULE}` command: {argv[:3]}"}
    ns, refused = oracle_cli.parse_quietly(parser, argv[3:])
    if ns is None:
        return {"ok": False, "error": refused}
    from sglang.srt.server_args import ServerArgs

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ServerArgs.from_cli_args(ns)
    except Exception as exc:  # SGLang's own refusal, in its own words
        return {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:600]}
    return {"ok": True, "error": ""}


def check(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parser = serve_parser()
    return [check_one(parser, list(x["argv"])) for x in launches]


if __name__ == "__main__":
    raise SystemExit(oracle_cli.main(__doc__, flags_text, HEADER, check, version))
