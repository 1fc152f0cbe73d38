"""`sparkfab fit`: what a model needs of N Sparks, per layout, and the settings that fit."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparkfab import fit
from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format, emit_json
from sparkfab.errors import Exit, UsageError
from sparkfab.files import userfile
from sparkfab.fit import plan as fp
from sparkfab.fit.shape import Shape, ShapeError, weights_on_disk


def _args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--model", help="a preset (default: every preset); `sparkfab fit --list` names them")
    g.add_argument("--config", type=at.path, help="a Hugging Face config.json, or the checkpoint's directory")
    g.add_argument("--list", action="store_true", help="name the presets and where their figures come from")
    p.add_argument("--sparks", type=at.integer(1, 1024), action="append", help="Sparks (repeat; default 1 2 4 8)")
    p.add_argument("--inventory", help="the Sparks of this inventory's first instance")
    p.add_argument("--context", type=at.integer(1, 1 << 24), default=32768, help="tokens per request (32768)")
    p.add_argument(
        "--requests",
        type=at.integer(1, 1 << 20),
        default=8,
        help="requests at once the recommended layout must hold (8, the paper's max-num-seqs)",
    )
    p.add_argument(
        "--fraction",
        type=at.number(0, 1, lo_open=True),
        default=fp.FRACTION,
        help=f"gpu-memory-utilization ({fp.FRACTION})",
    )
    p.add_argument(
        "--runtime-gib",
        type=at.number(0, 1024),
        default=fp.RUNTIME_BYTES / 2**30,
        help="the engine's own memory beside weights and KV cache, GiB (4, assumed)",
    )
    p.add_argument(
        "--memory-gb",
        type=at.number(1, 1e6, lo_open=True),
        default=fp.SPARK_TOTAL_BYTES / 1e9,
        help="a Spark's memory as its OS sees it, GB (121.63)",
    )
    p.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default="auto", help="as vLLM's flag (auto)")
    add_format(p)


def _shapes(args: argparse.Namespace) -> list[tuple[Shape, int | None]]:
    if args.config:
        path = Path(args.config)
        folder = path if path.is_dir() else None
        config = folder / "config.json" if folder else path
        if not config.is_file():
            raise UsageError(f"--config {config}: no such file")
        raw = userfile.read_json(config, "config.json")
        if not isinstance(raw, dict):
            raise UsageError(f"--config {config}: a config.json is a JSON object")
        try:
            shape = fit.from_dict(raw, source=str(config))
        except ShapeError as exc:
            raise UsageError(f"--config {config}: {exc}") from None
        return [(shape, weights_on_disk(folder) if folder else None)]
    known = fit.presets()
    if args.model and args.model not in known:
        raise UsageError(f"unknown preset '{args.model}' (known: {', '.join(known)}); or --config config.json")
    return [(known[n][0], None) for n in ([args.model] if args.model else list(known))]


def _sparks(args: argparse.Namespace) -> list[int]:
    if args.inventory:
        from sparkfab.resolve import load_plan

        plan = load_plan(args.inventory)
        return [plan.instances[0].tp if plan.instances else len(plan.hosts)]
    return sorted(set(args.sparks or [1, 2, 4, 8]))


def _gb(x: float) -> str:
    return f"{x / 1e9:,.1f} GB"


def _row(x: fp.Layout, memory: fp.Memory) -> dict[str, Any]:
    return {**asdict(x), "fits": x.fits, "tokens": x.tokens, "verdict": fp.verdict(x, memory)}


def recipe(x: fp.Layout, memory: fp.Memory, kv_dtype: str) -> dict[str, Any]:
    """The launch recipe's flags for a layout that fits."""
    flags: dict[str, Any] = {
        "tensor-parallel-size": x.tp,
        "pipeline-parallel-size": x.pp,
        "max-model-len": x.context,
        "max-num-seqs": max(1, int(x.concurrency)),
        "gpu-memory-utilization": round(memory.fraction, 3),
    }
    if kv_dtype != "auto":
        flags["kv-cache-dtype"] = kv_dtype
    return flags


def fit_cmd(args: argparse.Namespace) -> int:
    if args.list:
        for name, (_shape, source) in fit.presets().items():
            print(f"{name}: {source}")
        return Exit.OK
    memory = fp.Memory(
        args.memory_gb * 1e9, args.fraction, args.runtime_gib * 2**30, 1 if args.kv_cache_dtype == "fp8" else None
    )
    out = []
    for shape, on_disk in _shapes(args):
        context = min(args.context, shape.max_context or args.context)
        for n in _sparks(args):
            options = fp.layouts(shape, n, context, memory, on_disk)
            best = fp.recommend(options, args.requests)
            out.append(
                {
                    "model": shape.name,
                    "sparks": n,
                    "context": context,
                    "source": shape.source,
                    "params": shape.params,
                    "max_context": shape.max_context,
                    "weight_bits": shape.weight_bits,
                    "weights_on_disk": on_disk,
                    "layouts": [_row(x, memory) for x in options],
                    "recommended": recipe(best, memory, args.kv_cache_dtype) if best else None,
                }
            )
    if args.format == "json":
        emit_json({"memory": asdict(memory), "fits": out})
    else:
        _print(out, memory)
    return Exit.OK


def _print(out: list[dict[str, Any]], memory: fp.Memory) -> None:
    c = Console(width=140)
    c.print(
        f"a Spark: {memory.total / 1e9:,.2f} GB, the engine takes {memory.fraction:g} of it, "
        f"{memory.runtime / 2**30:g} GiB of that its own (assumed)"
    )
    for item in out:
        c.print(
            f"\n[bold]{escape(item['model'])}[/] on {item['sparks']} Spark(s), {item['context']:,} tokens "
            f"per request ({item['params'] / 1e9:,.1f} B parameters at {item['weight_bits']:g} bits)"
        )
        t = Table(show_edge=False)
        for col in (
            "layout",
            "weights/Spark",
            "KV cache/Spark",
            "longest context",
            "requests at once",
            "TP bytes/token",
            "PP bytes/token",
            "verdict",
        ):
            t.add_column(col, justify="left" if col in ("layout", "verdict") else "right")
        for x in item["layouts"]:
            t.add_row(
                f"TP{x['tp']} x PP{x['pp']}",
                _gb(x["weights"]),
                _gb(x["kv_cache"]),
                f"{x['longest']:,}" + (" (all)" if x["longest"] == item["max_context"] else ""),
                f"{x['concurrency']:,.1f}",
                f"{x['tp_bytes_per_token']:,.0f}",
                f"{x['pp_bytes_per_token']:,.0f}",
                escape(x["verdict"]),
            )
        c.print(t)
        rec = item["recommended"]
        c.print("recipe flags: " + (" ".join(f"--{k} {v}" for k, v in rec.items()) if rec else "none fits"))


VERBS = (
    Verb(
        "fit",
        "Which model fits how many Sparks: weights, KV cache, context and concurrency per TP x PP layout.",
        _args,
        fit_cmd,
    ),
)
