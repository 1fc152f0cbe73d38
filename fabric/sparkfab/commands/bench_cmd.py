"""`sparkfab bench`, `sparkfab battery`, `sparkfab report`."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import Progress

from sparkfab import spark
from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format
from sparkfab.errors import Exit, ServerError, Unavailable, UsageError, readable
from sparkfab.measure import plans
from sparkfab.measure.counters import sampler

if TYPE_CHECKING:  # the client side (httpx, asyncio) is imported by the verbs that talk to a server
    from sparkfab.measure.endpoint.access import Access


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url", required=True, type=at.http_url, help="the OpenAI-compatible server, e.g. http://10.0.0.11:8000"
    )
    p.add_argument(
        "--model", required=True, type=at.line(256), help="the model name the server answers to (its served-model-name)"
    )
    p.add_argument(
        "--plan", help="tests P1,...,P6 (default all), or a YAML file of {name, requests, prompt_tokens, output_tokens}"
    )
    p.add_argument("--rounds", type=at.integer(1, 1000), default=3, help="measured rounds of each test (3)")
    p.add_argument(
        "--warmup",
        type=at.integer(0, 100),
        default=1,
        help="rounds before a test larger than every test before it, not measured (1)",
    )
    p.add_argument(
        "--seed", type=at.integer(0, 2**63 - 1), default=0, help="seed of the prompts' padding (each run salts it)"
    )
    p.add_argument(
        "--output-tokens", type=at.integer(1, plans.MAX_OUTPUT_TOKENS), help="override the plan's 1,024 output tokens"
    )
    p.add_argument(
        "--counters", type=at.device_list, help="RDMA devices (or netdevs with --source netdev) to sample alongside"
    )
    p.add_argument(
        "--counters-host",
        metavar="HOST",
        help="sample this Spark's devices (with --inventory; bench runs on that Spark: `lab exec` in the lab)",
    )
    p.add_argument(
        "--source", choices=("rdma", "netdev"), default="rdma", help="counters of RDMA devices (default) or netdevs"
    )
    p.add_argument("--root", default="/", help="another sysfs tree (tests)")
    p.add_argument(
        "--idle-seconds", type=at.number(0, 3600), default=10.0, help="the link must be idle this long before a test"
    )
    p.add_argument(
        "--idle-below", type=at.number(1, 1e13), default=1e6, help="idle: fewer bytes per second than this (at least 1)"
    )
    p.add_argument(
        "--label",
        type=at.line(64),
        default=None,
        help="name of this configuration in reports, printable text on one line (e.g. 200, 100e)",
    )
    p.add_argument(
        "--metadata",
        nargs="+",
        action="extend",
        type=at.key_value,
        default=[],
        metavar="KEY=VALUE",
        help="what else to record of this run (e.g. image=... note=...): in run.json, each result_<test>.json "
        "(as vllm bench serve --metadata) and the report",
    )
    p.add_argument(
        "--link-speed",
        choices=spark.LINK_SPEEDS,
        help="the link-speed mode measured, for the report (the inventory's speed now, with --inventory)",
    )
    p.add_argument("--timeout", type=SECONDS, default=3600.0, help="seconds one request may take in all (default 3600)")
    p.add_argument(
        "--idle-timeout",
        type=SECONDS,
        default=300.0,
        help="seconds the server may stay silent within a request: before the first byte, between chunks (300)",
    )
    p.add_argument("--connect-timeout", type=SECONDS, default=10.0, help="seconds for a TCP connect (10)")
    p.add_argument("--resume", action="store_true", help="continue the run in RUN_DIR: rounds it finished are kept")
    p.add_argument(
        "--inventory", help="the cluster being measured: its name and current link speed go into the run's metadata"
    )
    p.add_argument("--lab", action="store_true", help="the inventory's lab is measured (its shaped link rate)")
    p.add_argument(
        "--instance",
        metavar="NAME",
        help="the instance measured (with --inventory; default: the one on the URL's port)",
    )
    p.add_argument("-o", "--output", type=at.path, required=True, help="run directory (new or empty)")
    _access_args(p)


def _access_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api-key-env", metavar="NAME", help="send the API key held in this environment variable (e.g. VLLM_API_KEY)"
    )
    p.add_argument("--ca-file", help="trust this CA bundle for an https URL")
    p.add_argument("--insecure", action="store_true", help="https without checking the certificate (not recommended)")


def _access(args: argparse.Namespace) -> Access:
    from sparkfab.measure.endpoint.access import Access

    return Access.from_args(args.api_key_env, args.insecure, args.ca_file)


def _context(args: argparse.Namespace) -> dict[str, Any]:
    """What the run measured, for its run.json (`cluster.measured.context`), or with no
    inventory the --link-speed given and its rate."""
    if not args.inventory:
        if args.lab or args.instance:
            raise UsageError(f"{'--lab' if args.lab else '--instance'} needs --inventory (the cluster measured)")
        if args.link_speed:
            return {"link": {"link_speed": args.link_speed, "link_gbps": spark.LINK_GBPS[args.link_speed]}}
        return {}
    if args.link_speed:
        raise UsageError("--link-speed: with --inventory the speed measured is the inventory's speed now")
    from sparkfab.cluster import measured
    from sparkfab.cluster.limits import instance_limit
    from sparkfab.cluster.target import Target

    target = Target.load(args.inventory, lab=args.lab)
    if args.instance:
        instance_limit(target.plan, args.instance, None)  # names the instances when it is not one of them
    return {"inventory": measured.context(target, str(args.inventory), args.url, args.instance)}


def _remote_read(args: argparse.Namespace) -> Callable[[str], str | None] | None:
    """With --inventory: read a file on the measured instance's rank 0 (`cluster.measured`)."""
    if not args.inventory:
        return None
    from sparkfab.cluster import measured

    return measured.rank0_reader(args.inventory, args.lab, args.url, args.instance)


SECONDS = at.number(0, 7 * 86400, lo_open=True)


def _run_dir(path: Path, resume: bool) -> Path:
    """A new or empty directory (made once the server answered); with --resume, one that holds a run."""
    from sparkfab.files.outputs import plain_target
    from sparkfab.measure.bench.rundir import RunDir

    path = plain_target(path, "-o")
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {path} exists and is not a directory")
    held = bool(RunDir(path).written())
    if resume and not RunDir(path).holds_a_run():
        raise UsageError(f"--resume: {path} holds no run (no run.json)")
    if held and not resume:
        raise UsageError(f"-o {path} holds files already (a run?): choose a new directory, or --resume to continue it")
    if not path.absolute().parent.is_dir():
        raise Unavailable(f"-o {path}: no directory {path.absolute().parent}")
    return path


def bench_cmd(args: argparse.Namespace) -> int:
    from sparkfab.measure import bench
    from sparkfab.measure.bench import vllmstats

    tests = plans.select(args.plan, args.output_tokens)
    devices = args.counters
    if args.counters_host:
        if args.counters or not args.inventory:
            raise UsageError("--counters-host takes the devices from --inventory: give it instead of --counters")
        from sparkfab.cluster.measured import host_devices

        devices = host_devices(args.inventory, args.counters_host, args.source)
    counters = sampler.counters_of(devices, args.source, args.root) if devices else None
    out = _run_dir(args.output, args.resume)
    opt = bench.Options(
        url=args.url,
        model=args.model,
        out=out,
        rounds=args.rounds,
        warmup=args.warmup,
        seed=args.seed,
        counters=counters,
        idle_s=args.idle_seconds,
        idle_bps=args.idle_below,
        timeout_s=args.timeout,
        label=args.label or out.name,
        silence_s=args.idle_timeout,
        connect_s=args.connect_timeout,
        resume=args.resume,
        access=_access(args),
        context=_context(args),
        remote_read=_remote_read(args),
        metadata=dict(args.metadata),
    )
    total = sum(t.requests for t in tests) * args.rounds + sum(t.requests for t in plans.warmed(tests)) * args.warmup
    with Progress(transient=True, disable=args.quiet) as progress:
        task = progress.add_task("requests", total=total)
        live = progress.console.is_terminal and not args.quiet

        def phase(text: str) -> None:
            """What the run does now: the bar's caption on a terminal, a line on stderr elsewhere."""
            if live:
                progress.update(task, description=escape(text))  # a test's name is the user's text
            elif not args.quiet:
                sys.stderr.write(f"bench: {text}\n")

        run = bench.Run(opt, tests, lambda r: progress.advance(task), phase)
        summary = asyncio.run(
            run.run(lambda server: progress.console.print(f"server: {server.describe()}", soft_wrap=True, markup=False))
        )
    # each test as `vllm bench serve` prints its result (the figures of its result_<test>.json)
    from sparkfab.measure.bench.rundir import RunDir

    server = RunDir(out).server()
    for name, t in summary.tests.items():
        sys.stdout.write(vllmstats.console_block(name, t.vllm, server.get(name)))
    sys.stderr.write(f"results in {out}/requests.jsonl and summary.json\n")
    if summary.errors:
        first = next(e for t in summary.tests.values() for e in t.errors)
        raise ServerError(f"{summary.errors} of {summary.requests} requests failed (first: {first[:200]})")
    return Exit.OK


def _battery_args(p: argparse.ArgumentParser) -> None:
    from sparkfab.measure.bench.battery import CHECKS

    p.add_argument("--url", required=True, type=at.http_url, help="the OpenAI-compatible server")
    p.add_argument("--model", required=True, type=at.line(256), help="the model name the server answers to")
    p.add_argument("--checks", type=at.choices(CHECKS), help=f"{','.join(CHECKS)} (default all)")
    add_format(p)
    p.add_argument(
        "--context-chars",
        type=at.integer(1000, 4_000_000),
        default=60_000,
        help="characters of context for the needle check (the prefix check uses two thirds)",
    )
    p.add_argument("--timeout", type=SECONDS, default=600.0, help="seconds one answer may take (600)")
    _access_args(p)


def battery_cmd(args: argparse.Namespace) -> int:
    from sparkfab.measure.bench.battery import run_sync

    checks = run_sync(args.url, args.model, args.checks, args.context_chars, args.timeout, _access(args))
    if args.format == "json":
        sys.stdout.write(json.dumps([dataclasses.asdict(c) for c in checks], indent=2, ensure_ascii=False) + "\n")
    else:
        for c in checks:
            sys.stdout.write(f"{'PASS' if c.passed else 'FAIL'}  {c.name:<7} {c.evidence}\n")
    return Exit.OK if all(c.passed for c in checks) else Exit.CHECK


def _report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        type=at.path,
        metavar="RUN",
        help="one or two runs: bench's run directories, or the JSON that `vllm bench serve --save-result "
        "--save-detailed` writes",
    )
    p.add_argument("--estimate", action="store_true", help="compare with the estimate (name the model)")
    p.add_argument("--model", help="the served model as an estimate preset (see `sparkfab estimate --help`)")
    p.add_argument("--config", help="the served model's config.json, for --estimate")
    p.add_argument(
        "--tp", type=at.integer(1, 1024), help="TP size the runs served at (default: what bench recorded, else 8)"
    )
    p.add_argument("-o", "--output", type=at.path, required=True, help="directory (new, empty or an earlier report)")


def report_cmd(args: argparse.Namespace) -> int:
    from sparkfab.files.outputs import check_dir, replace_dir
    from sparkfab.measure.bench.runs import load_run
    from sparkfab.measure.estimate import Setup
    from sparkfab.measure.estimate import model as models
    from sparkfab.measure.report import write

    if len(args.runs) > 2:
        raise UsageError("report compares one or two runs")
    if args.model and args.config:
        raise UsageError("--model and --config both name the served model: give one")
    if (args.model or args.config or args.tp) and not args.estimate:
        raise UsageError("--model, --config and --tp are for --estimate: add it, or leave them out")
    inputs = [*args.runs, *([args.config] if args.config else [])]
    check_dir(args.output, "report", inputs)
    runs = [load_run(r) for r in args.runs]
    for r in runs:
        if r.skipped:
            sys.stderr.write(f"warning: {r.dir}/requests.jsonl: skipped {r.skipped} unreadable line(s)\n")
    setup, assumption = None, ""
    if args.estimate:
        from sparkfab.measure.bench.runs import link_gbps, served_config, served_tp

        served = served_config(runs[0])
        if not (args.model or args.config) and served is not None:
            args.config = str(served)  # the served model is a local checkpoint: its own config
        if not (args.model or args.config):
            raise UsageError("--estimate needs the served model: --config its config.json, or --model a preset")
        spec = models.from_config(args.config) if args.config else models.preset(args.model)
        tp = args.tp or served_tp(runs[0]) or 8
        setup = Setup(spec, tp)
        setup.check()  # as estimate does: a TP the model's heads do not divide into is named
        source = f"--config {args.config}" if args.config else f"preset {args.model}"
        links = " -> ".join(f"{r.label} = {link_gbps(r, i):g} Gb/s" for i, r in enumerate(runs[:2]))
        assumption = f"{spec.name} ({source}: hidden {spec.hidden}, {spec.layers} layers) at TP{tp}; {links}"
        sys.stderr.write(f"estimate: {assumption}\n")
    result: dict[str, Any] = {}

    def make(d: Path) -> list[Path]:
        result.update(write(runs[0], runs[1] if len(runs) > 1 else None, setup, d, assumption))
        return [Path(f) for f in result["files"]] + [d / "tables.json"]

    written = replace_dir(args.output, "report", make, inputs)
    sys.stdout.write((args.output / "report.md").read_text(encoding="utf-8"))
    sys.stderr.write("wrote " + ", ".join(str(p) for p in written if p.name != "tables.json") + "\n")
    _say_verdicts(result["tables"])
    return Exit.OK


def _say_verdicts(tables: dict[str, Any]) -> None:
    """The verdicts last, one line per test."""
    for row in tables["ttft"]:
        if "verdict" in row:
            sys.stderr.write(readable(f"verdict {row['test']}: {row['verdict']}") + "\n")


VERBS = (
    Verb(
        "bench",
        "Drive the serving endpoint with the fixed plan P1-P6; record TTFT, decode speed and traffic.",
        _bench_args,
        bench_cmd,
    ),
    Verb(
        "battery", "Quality checks: count to 100, Hangul, tool call, needle, prefix reuse.", _battery_args, battery_cmd
    ),
    Verb(
        "report",
        "Two runs side by side: TTFT, decode speed, traffic per token, plots and an HTML page.",
        _report_args,
        report_cmd,
    ),
)
