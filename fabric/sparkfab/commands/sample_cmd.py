"""`sparkfab sample` and `sparkfab traffic`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format
from sparkfab.errors import Exit, UsageError
from sparkfab.files.outputs import check_file, png_by_sparkfab, starts_with, write_file
from sparkfab.measure.counters import sampler, traffic


def _sample_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", help="take the devices of --host from this inventory")
    p.add_argument("--host", help="the Spark this sampler runs on (with --inventory)")
    p.add_argument("--devices", type=at.device_list, help="comma-separated RDMA devices or netdevs")
    p.add_argument(
        "--source", choices=("rdma", "netdev"), default="rdma", help="counters of RDMA devices (default) or netdevs"
    )
    p.add_argument("--interval", type=at.interval(1e-4, 60.0), default="1ms", help="sample period (default 1ms)")
    p.add_argument("--duration", type=at.number(0, 30 * 86400, lo_open=True), help="seconds (default: until stopped)")
    p.add_argument("--root", default="/", help="another sysfs tree (tests)")
    p.add_argument("-o", "--output", type=at.file_path, required=True, help="the sample file to write (new)")


def _devices(args: argparse.Namespace) -> list[str]:
    if args.devices:
        return list(args.devices)
    if not (args.inventory and args.host):
        raise UsageError("name the counters: --devices LIST, or --inventory FILE --host H")
    from sparkfab.cluster.measured import host_devices

    return host_devices(args.inventory, args.host, args.source)


def sample_cmd(args: argparse.Namespace) -> int:
    devs = _devices(args)
    counters = sampler.counters_of(devs, args.source, args.root)
    out = check_file(args.output, ours=None)
    stats = sampler.sample(
        counters,
        out,
        args.interval,
        args.duration,
        meta={"devices": devs, "host": args.host},  # the source: what the counters are (the sampler says)
    )
    br = sorted(stats.brackets_ns) or [0]
    sys.stderr.write(
        f"{stats.samples} samples into {args.output} ({'SCHED_FIFO' if stats.realtime else 'normal priority'}); "
        f"missed deadlines {stats.missed}; largest gap "
        f"{stats.max_gap_ns / 1e6:.2f} ms; bracket p50 {br[len(br) // 2] / 1e3:.1f} us, p99 "
        f"{br[int(0.99 * (len(br) - 1))] / 1e3:.1f} us\n"
    )
    return Exit.OK


def _traffic_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=at.path, help="a sample file of `sparkfab sample` or bench")
    p.add_argument(
        "--intervals", type=at.interval_list(1e-4, 86400.0), default="1ms,5ms,100ms,1s", help="averaging intervals"
    )
    p.add_argument("--window", type=at.window, help="START:END in seconds from the first sample")
    p.add_argument("--direction", choices=("tx", "rx"), default="tx", help="sent (tx, default) or received bytes")
    p.add_argument("--plot", type=at.path, help="write a PNG time series (with --window: a zoom panel)")
    p.add_argument(
        "--export",
        type=at.path,
        help="write the rates per bin to FILE.csv, or FILE.prom (OpenMetrics with timestamps: promtool backfills it)",
    )
    p.add_argument(
        "--export-interval", type=at.interval(1e-4, 3600.0), default="1ms", help="bin width of --export (1ms)"
    )
    add_format(p)


def _export_target(args: argparse.Namespace) -> Path | None:
    if not args.export:
        return None
    kind = args.export.suffix.lower()  # the same case rule as --plot's .png
    if kind not in (".csv", ".prom"):
        raise UsageError(f"--export {args.export}: name a .csv or a .prom file")
    csv_ours = (traffic.CSV_HEADER + "\n").encode()
    ours = starts_with(csv_ours) if kind == ".csv" else starts_with(b"# HELP sparkfab_")
    return check_file(args.export, [args.file], ours, "--export")


def traffic_cmd(args: argparse.Namespace) -> int:
    plot = check_file(args.plot, [args.file], png_by_sparkfab, "--plot", ".png") if args.plot else None
    export = _export_target(args)
    try:
        return _traffic(args, plot, export)
    except UsageError as exc:  # what the samples cannot give (too many bins): said with their file
        text = str(exc)
        raise UsageError(text if text.startswith(str(args.file)) else f"{args.file}: {text}") from None


def _traffic(args: argparse.Namespace, plot: Path | None, export: Path | None) -> int:
    samples = sampler.read(args.file)
    if len(samples.t0) < 2:
        raise UsageError(f"{args.file}: {len(samples.t0)} sample(s): rates need at least two")
    sr = traffic.series(samples)
    window = args.window
    intervals = args.intervals
    s = traffic.summary(sr)
    peaks = traffic.peaks(sr, intervals, args.direction, window)
    if export:
        if export.suffix.lower() == ".csv":
            rows = traffic.export_rows(sr, args.export_interval, window)
            text = traffic.to_csv(rows)
        else:
            devices = sorted({c["device"] for c in samples.counters})
            per_device = {
                d: traffic.export_rows(traffic.series(samples, d), args.export_interval, window) for d in devices
            }
            rows = per_device[devices[0]]
            labels = {"host": samples.host, "source": samples.source, "file": args.file.name}
            text = traffic.to_openmetrics(per_device, args.export_interval, labels)
        write_file(export, text, flag="--export")
        sys.stderr.write(f"wrote {len(rows)} bins ({args.export_interval * 1e3:g} ms each) to {export}\n")
    if plot:
        from sparkfab.measure.estimate.plots import traffic_plot

        traffic_plot(sr, plot, args.direction, window)
        sys.stderr.write(f"wrote {plot}\n")
    if args.format == "json":
        result = {"summary": asdict(s), "direction": args.direction, "peaks": [p.to_dict() for p in peaks]}
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return Exit.OK
    c = Console()
    c.print(
        f"{s.samples} samples over {s.duration_s:.3f} s; bytes {s.bytes}; resets {s.resets}, wraps "
        f"{s.wraps}, missed deadlines {s.missed_deadlines}; bracket p50 {s.bracket_us['p50']:.1f} us, "
        f"p99 {s.bracket_us['p99']:.1f} us"
    )
    t = Table(title=f"highest {args.direction} rate per averaging interval")
    for col in ("interval", "highest value", "timing uncertainty"):
        t.add_column(col, justify="right")
    for row in peaks:
        label = "whole window (average)" if row.whole_window else f"{row.interval_s * 1e3:g} ms"
        t.add_row(label, f"{row.peak_gbps:.3f} Gb/s", f"+/-{row.uncertainty:.1%}")
    c.print(t)
    return Exit.OK


VERBS = (
    Verb(
        "sample", "Sample RDMA (or netdev) counters at 1 ms into a file, streamed as it goes.", _sample_args, sample_cmd
    ),
    Verb(
        "traffic",
        "Rates from a sample file: peaks per averaging interval, window averages, plot.",
        _traffic_args,
        traffic_cmd,
    ),
)
