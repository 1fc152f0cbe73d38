"""`sparkfab bench`, `sparkfab battery`, `sparkfab report`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from rich.progress import Progress

from sparkfab.cli import command
from sparkfab.measure import bench, sampler


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="the OpenAI-compatible server, e.g. http://10.0.0.11:8000")
    p.add_argument("--model", required=True)
    p.add_argument(
        "--plan", help="tests P1,...,P6 (default all), or a YAML file of {name, requests, prompt_tokens, output_tokens}"
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-tokens", type=int, help="override the plan's 1,024 output tokens")
    p.add_argument("--counters", help="RDMA devices (or netdevs with --source netdev) to sample alongside")
    p.add_argument("--source", choices=("rdma", "netdev"), default="rdma")
    p.add_argument("--root", default="/", help="another sysfs tree (tests)")
    p.add_argument("--idle-seconds", type=float, default=10.0, help="the link must be idle this long before a test")
    p.add_argument("--idle-below", type=float, default=1e6, help="idle: fewer bytes per second than this")
    p.add_argument("--label", default="", help="name of this configuration in reports (e.g. 200, 100e)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds one request may take in all")
    p.add_argument("-o", "--output", type=Path, required=True, help="run directory")


@command(
    "bench", "Drive the serving endpoint with the fixed plan P1-P6; record TTFT, decode speed and traffic.", _bench_args
)
def bench_cmd(args: argparse.Namespace) -> int:
    tests = bench.load_plan(args.plan, args.output_tokens)
    counters = None
    if args.counters:
        make = sampler.rdma_counters if args.source == "rdma" else sampler.netdev_counters
        counters = make(args.counters.split(","), args.root)
    opt = bench.Options(
        args.url,
        args.model,
        args.output,
        args.rounds,
        args.warmup,
        args.seed,
        counters,
        args.idle_seconds,
        args.idle_below,
        args.timeout,
        args.label or args.output.name,
    )
    total = sum(t.requests for t in tests) * (args.rounds + args.warmup)
    with Progress(transient=True, disable=args.quiet) as progress:
        task = progress.add_task("requests", total=total)
        run = bench.Run(opt, tests, lambda r: progress.advance(task))
        summary = asyncio.run(
            run.run(lambda server: progress.console.print(f"server: {server.describe()}", soft_wrap=True))
        )
    for name, t in summary["tests"].items():
        ttft = t["last_first_token_s"] if t["requests"] > 1 else t["ttft_s"]
        dec = t["decode_tps"]
        sys.stdout.write(f"{name}: TTFT {ttft['mean']:.3f} s" if ttft else f"{name}: no result")
        sys.stdout.write(f", decode {dec['mean']:.1f} tok/s" if dec else "")
        sys.stdout.write(f", {len(t['errors'])} error(s)\n" if t["errors"] else "\n")
    sys.stderr.write(f"results in {args.output}/requests.jsonl and summary.json\n")
    return 1 if summary["errors"] else 0


def _battery_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--checks", help="count,hangul,tools,needle,prefix (default all)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument(
        "--context-chars",
        type=int,
        default=60_000,
        help="characters of context for the needle check (the prefix check uses two thirds)",
    )


@command("battery", "Quality checks: count to 100, Hangul, tool call, needle, prefix reuse.", _battery_args)
def battery_cmd(args: argparse.Namespace) -> int:
    from sparkfab.measure.battery import run_sync

    checks = run_sync(args.url, args.model, args.checks.split(",") if args.checks else None, args.context_chars)
    if args.format == "json":
        sys.stdout.write(json.dumps(checks, indent=2, ensure_ascii=False) + "\n")
    else:
        for c in checks:
            sys.stdout.write(f"{'PASS' if c['passed'] else 'FAIL'}  {c['name']:<7} {c['evidence']}\n")
    return 0 if all(c["passed"] for c in checks) else 4


def _report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="one or two run directories")
    p.add_argument("--estimate", action="store_true", help="compare with the estimate")
    p.add_argument("--model", default="glm-5.3", help="preset for --estimate")
    p.add_argument("--config", help="config.json for --estimate")
    p.add_argument("--tp", type=int, default=8)
    p.add_argument("-o", "--output", type=Path, required=True)


@command(
    "report", "Two runs side by side: TTFT, decode speed, traffic per token, plots and an HTML page.", _report_args
)
def report_cmd(args: argparse.Namespace) -> int:
    from sparkfab.errors import UsageError
    from sparkfab.measure import model as models
    from sparkfab.measure.estimate import Setup
    from sparkfab.measure.report import load_run, write

    if len(args.runs) > 2:
        raise UsageError("report compares one or two runs")
    a = load_run(args.runs[0])
    b = load_run(args.runs[1]) if len(args.runs) > 1 else None
    setup = None
    if args.estimate:
        spec = models.from_config(args.config) if args.config else models.preset(args.model)
        setup = Setup(spec, args.tp)
    result = write(a, b, setup, args.output)
    sys.stdout.write((args.output / "report.md").read_text())
    sys.stderr.write("wrote " + ", ".join(result["files"]) + "\n")
    return 0
