"""`sparkfab sample` and `sparkfab traffic`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkfab.cli import command
from sparkfab.errors import UsageError
from sparkfab.measure import sampler, traffic


def _interval(text: str) -> float:
    text = text.strip().lower()
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text)


def _sample_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", help="take the devices of --host from this inventory")
    p.add_argument("--host", help="the Spark this sampler runs on (with --inventory)")
    p.add_argument("--devices", help="comma-separated RDMA devices or netdevs")
    p.add_argument("--source", choices=("rdma", "netdev"), default="rdma")
    p.add_argument("--interval", default="1ms")
    p.add_argument("--duration", type=float, help="seconds (default: until stopped)")
    p.add_argument("--root", default="/", help="another sysfs tree (tests)")
    p.add_argument("-o", "--output", type=Path, required=True)


def _devices(args: argparse.Namespace) -> list[str]:
    if args.devices:
        return [d for d in args.devices.split(",") if d]
    if not (args.inventory and args.host):
        raise UsageError("name the counters: --devices LIST, or --inventory FILE --host H")
    from sparkfab.commands.deploy_cmds import current_link_speed
    from sparkfab.target import load

    plan = load(args.inventory)
    host = plan.host(args.host) if args.host in {h.name for h in plan.hosts} else None
    if host is None:
        raise UsageError(f"{args.host} is not a host of {args.inventory}")
    mode = current_link_speed(plan)
    return list(host.hca[mode]) if args.source == "rdma" else [i.netdev for i in host.ifaces if args.source == "netdev"]


@command("sample", "Sample RDMA (or netdev) counters at 1 ms into a file, streamed as it goes.", _sample_args)
def sample_cmd(args: argparse.Namespace) -> int:
    devs = _devices(args)
    make = sampler.rdma_counters if args.source == "rdma" else sampler.netdev_counters
    counters = make(devs, args.root)
    missing = [c.path for c in counters if not Path(c.path).exists()]
    if missing:
        raise UsageError("no such counter: " + ", ".join(missing))
    stats = sampler.sample(
        counters,
        args.output,
        _interval(args.interval),
        args.duration,
        meta={"source": args.source, "devices": devs, "host": args.host},
    )
    br = sorted(stats.brackets_ns) or [0]
    sys.stderr.write(
        f"{stats.samples} samples into {args.output} ({'SCHED_FIFO' if stats.realtime else 'normal priority'}); "
        f"missed deadlines {stats.missed}; largest gap "
        f"{stats.max_gap_ns / 1e6:.2f} ms; bracket p50 {br[len(br) // 2] / 1e3:.1f} us, p99 "
        f"{br[int(0.99 * (len(br) - 1))] / 1e3:.1f} us\n"
    )
    return 0


def _traffic_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path)
    p.add_argument("--intervals", default="1ms,5ms,100ms,1s")
    p.add_argument("--window", help="START:END in seconds from the first sample")
    p.add_argument("--direction", choices=("tx", "rx"), default="tx")
    p.add_argument("--plot", type=Path, help="write a PNG time series (with --window: a zoom panel)")
    p.add_argument("--format", choices=("table", "json"), default="table")


@command("traffic", "Rates from a sample file: peaks per averaging interval, window averages, plot.", _traffic_args)
def traffic_cmd(args: argparse.Namespace) -> int:
    sr = traffic.series(sampler.read(args.file))
    window = None
    if args.window:
        start, _, end = args.window.partition(":")
        window = (float(start), float(end))
    intervals = [_interval(x) for x in args.intervals.split(",")]
    result = {
        "summary": traffic.summary(sr),
        "direction": args.direction,
        "peaks": traffic.peaks(sr, intervals, args.direction, window),
    }
    if args.plot:
        from sparkfab.measure.plots import traffic_plot

        traffic_plot(sr, args.plot, args.direction, window)
        sys.stderr.write(f"wrote {args.plot}\n")
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    s = result["summary"]
    c = Console()
    c.print(
        f"{s['samples']} samples over {s['duration_s']:.3f} s; bytes {s['bytes']}; resets {s['resets']}, wraps "
        f"{s['wraps']}, missed deadlines {s['missed_deadlines']}; bracket p50 {s['bracket_us']['p50']:.1f} us, "
        f"p99 {s['bracket_us']['p99']:.1f} us"
    )
    t = Table(title=f"highest {args.direction} rate per averaging interval")
    for col in ("interval", "highest value", "timing uncertainty"):
        t.add_column(col, justify="right")
    for row in result["peaks"]:
        label = "whole window (average)" if row.get("whole_window") else f"{row['interval_s'] * 1e3:g} ms"
        t.add_row(label, f"{row['peak_gbps']:.3f} Gb/s", f"+/-{row['uncertainty']:.1%}")
    c.print(t)
    return 0
