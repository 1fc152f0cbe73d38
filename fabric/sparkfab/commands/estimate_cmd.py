"""`sparkfab estimate`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format
from sparkfab.errors import Exit, UsageError
from sparkfab.measure.estimate import Estimate, Measured, Setup, TpRow, estimate
from sparkfab.measure.estimate import model as models
from sparkfab.measure.estimate.gloo import gloo_view

if TYPE_CHECKING:
    from sparkfab.plan import Plan

#: a link speed in Gb/s: from a slow 100 Mb/s link to 100 Tb/s (a bound, so the figures stay finite)
GBPS = at.number(0.1, 1e5)


def _args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--model", help=f"a preset: {', '.join(sorted(models.PRESETS))} (default glm-5.3)")
    g.add_argument("--config", help="a Hugging Face config.json")
    p.add_argument("--tp", type=at.integer(1, 1024), help="TP size (default: the inventory's first instance, else 8)")
    p.add_argument(
        "--chunk", type=at.integer(1, 1 << 22), default=4096, help="prefill chunk, tokens (--max-num-batched-tokens)"
    )
    p.add_argument("--from", dest="from_gbps", type=GBPS, help="link speed now, Gb/s (default 200)")
    p.add_argument("--to", dest="to_gbps", type=GBPS, help="the slower link, Gb/s (default 100)")
    p.add_argument("--ttft", type=at.number(0, 86400, lo_open=True), help="measured TTFT (s) of an 8K prompt at --from")
    p.add_argument(
        "--ttft-prompt", type=at.integer(1, 1 << 24), default=8192, help="prompt tokens of the --ttft measurement"
    )
    p.add_argument("--mtp-split", action="store_true", help="the MTP draft runs on the split model")
    p.add_argument("--active-params", type=at.number(0, 1e15, lo_open=True), help="parameters read per token (40e9)")
    p.add_argument("--bits-per-weight", type=at.number(0, 64, lo_open=True), help="e.g. 4.5 for NVFP4 with its scales")
    p.add_argument("--mtp-tokens", type=at.integer(0, 64), help="draft tokens per decode pass")
    p.add_argument("--inventory", help="take TP size and link speed from this inventory")
    p.add_argument(
        "--lab",
        action="store_true",
        help="the inventory's lab: its model's config, and its shaped rates for 200 and 100e as --from and --to",
    )
    p.add_argument("--plan", help="tests to bound: P1-P6 (default), `lab` (default with --lab), names, or a YAML file")
    add_format(p)
    p.add_argument("--plot", type=at.path, help="write PNG plots into this directory (new, empty or an earlier one)")


def _setup(args: argparse.Namespace) -> Setup:
    tp, from_gbps, to_gbps, config = args.tp, args.from_gbps, args.to_gbps, args.config
    if args.lab:
        from_gbps, to_gbps, config = _lab(args, from_gbps, to_gbps, config)
    spec = models.from_config(config) if config else models.preset(args.model or "glm-5.3")
    spec = models.with_overrides(
        spec, active_params=args.active_params, bits_per_weight=args.bits_per_weight, mtp_tokens=args.mtp_tokens
    )
    if args.inventory:
        from sparkfab.resolve import load_plan

        plan = load_plan(args.inventory)
        if not plan.instances:
            raise UsageError(f"{args.inventory} has no instance to take the TP size from")
        tp = tp or plan.instances[0].tp
        from_gbps = from_gbps or (100.0 if plan.link_speed == "100" else 200.0)
    from_gbps, to_gbps = from_gbps or 200.0, to_gbps or 100.0
    if to_gbps >= from_gbps:
        raise UsageError(f"--to {to_gbps:g} Gb/s is not slower than --from {from_gbps:g} Gb/s")
    return Setup(spec, tp or 8, args.chunk, from_gbps, to_gbps, args.mtp_split)


def _lab(
    args: argparse.Namespace, from_gbps: float | None, to_gbps: float | None, config: str | None
) -> tuple[float, float, str | None]:
    """The lab's shaped rates for 200 and 100e, and its model's config unless another is named."""
    from sparkfab.lab import rates
    from sparkfab.paths import lab_paths
    from sparkfab.resolve import load_plan

    if not args.inventory:
        raise UsageError("--lab needs --inventory (the cluster whose lab is estimated)")
    plan = load_plan(args.inventory)
    if not (config or args.model):
        path = lab_paths(plan.cluster).model / "config.json"
        if not path.is_file():
            raise UsageError(f"--lab: no lab model at {path}: run `sparkfab lab up {args.inventory}` first")
        config = str(path)
    scale = _lab_scale(plan)
    return from_gbps or rates.rate_gbps("200", scale), to_gbps or rates.rate_gbps("100e", scale), config


def _lab_scale(plan: Plan) -> int:
    """The scale of the lab's cables: as the lab up now shaped them (its state), else as `lab up`
    would shape this inventory's."""
    from sparkfab.lab import rates
    from sparkfab.lab.state import LabState
    from sparkfab.paths import lab_dir, lab_state

    if lab_state(plan.cluster).is_file():
        return LabState.read(lab_dir(plan.cluster)).spec.scale
    return rates.scale_for(plan)


def estimate_cmd(args: argparse.Namespace) -> int:
    from sparkfab.measure.plans import select as bench_plan

    s = _setup(args)
    tests = bench_plan(args.plan or ("lab" if args.lab else None))
    result = estimate(s, args.ttft, args.ttft_prompt, tests, gloo=gloo_view(s) if args.lab else None)
    if args.plot:
        from sparkfab.files.outputs import replace_dir
        from sparkfab.measure.estimate.plots import estimate_plots

        inputs = [x for x in (args.config, args.inventory) if x]
        written = replace_dir(args.plot, "estimate", lambda d: estimate_plots(s, d, args.ttft), inputs, "--plot")
        for path in written:
            sys.stderr.write(f"wrote {path}\n")
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        print_estimate(result)
    return Exit.OK


def _mb(x: float) -> str:
    """A size in the unit that keeps it readable: 512 B, 15.4 kB, 3.38 MB, 27.7 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:,.3g} {unit}" if x / scale < 100 else f"{x / scale:,.0f} {unit}"
    return f"{x:,.0f} B"


def print_estimate(r: Estimate) -> None:
    c = Console(width=130)
    c.print(f"[bold]{escape(r.model)}[/] at TP{r.tp}, {r.from_gbps:g} -> {r.to_gbps:g} Gb/s")
    c.print(
        f"all-reduces per prompt token {r.allreduces_per_token} x {r.bytes_per_value} bytes per value x "
        f"ring factor {r.ring_factor:.3f} = [bold]{_mb(r.bytes_per_token)}[/] per prompt token per Spark"
    )
    emulated = r.emulated_comparison
    c.print(
        f"extra TTFT <= [bold]{r.extra_s_per_1000_tokens:.3f} s[/] per 1,000 prompt tokens"
        + (
            f" ({r.extra_s_per_1000_tokens_emulated:.3f} s to the emulated {r.emulated_gbps:g} Gb/s link; a "
            f"real 100G cable adds at most {r.real_cable_s_per_1000_tokens:.3f} s more)"
            if emulated
            else ""
        )
    )
    ch = r.chunk
    c.print(
        f"per {ch.chunk_tokens:,}-token chunk: block {_mb(ch.block_bytes)}, each Spark sends "
        f"{_mb(ch.sent_bytes)} in {ch.ring_steps} ring steps of {_mb(ch.segment_bytes)}: "
        f"{ch.send_s_from * 1e3:.1f} ms at {r.from_gbps:g}, "
        f"{ch.send_s_to * 1e3:.1f} ms at {r.to_gbps:g} Gb/s"
    )
    _plan_table(c, r)
    d = r.decode
    c.print(
        f"decode: {d.tokens_per_pass} tokens per pass, {d.allreduce_bytes / 1e3:.0f} KB per all-reduce "
        f"({d.sent_per_allreduce / 1e3:.0f} KB sent: {d.send_us_from:.1f} us at {r.from_gbps:g}, "
        f"{d.send_us_to:.1f} us at {r.to_gbps:g}), {_mb(d.bytes_per_pass)} per pass "
        f"({_mb(d.bytes_per_pass / d.tokens_per_pass)} per token it checks); weight-read floor "
        f"{d.pass_floor_s * 1e3:.1f} ms ({d.weight_bytes_per_spark / 1e9:.2f} GB per Spark) -> traffic "
        f"<= {d.traffic_bound_gbps:.1f} Gb/s, a slower link adds <= {d.extra_per_pass_s * 1e3:.2f} ms per pass"
    )
    if r.gloo is not None:
        g = r.gloo
        c.print(
            f"the lab's engine (Gloo over TCP, about {g.step_bytes} B per ring step beyond the payload): "
            f"prefill {g.prefill_bytes_per_token:,.0f} B per prompt token and {g.prefill_pass_bytes:,.0f} B per "
            "prefill pass (its ring steps, the first token's scores); decode "
            f"{g.decode_bytes_per_token:,.0f} B per output token (the formula alone: "
            f"{g.decode_bytes_per_token_formula:,.0f} B)"
        )
    if r.measured is not None:
        _measured(c, r.measured, r.tp_projection or ())
    sw = r.switch
    c.print(
        f"switch for {r.tp} Sparks: at 200G {sw['200'].switch or 'none in the catalog'} "
        f"({sw['200'].breakout}); at 100G {sw['100'].switch or 'none'} ({sw['100'].breakout})"
    )


def _plan_table(c: Console, r: Estimate) -> None:
    t = Table(title="test plan: extra prefill time, upper bound")
    cols = ["test", "prompt tokens", "prefill bytes per Spark", f"{r.from_gbps:g} -> {r.to_gbps:g}"]
    for col in cols + ([f"{r.from_gbps:g} -> {r.emulated_gbps:g}"] if r.emulated_comparison else []):
        t.add_column(col, justify="right")
    for row in r.plan:
        cells: list[Text | str] = [
            Text(row.test),
            f"{row.prompt_tokens:,}",
            _mb(row.prefill_bytes),
            f"<= +{row.extra_s:.2f} s",
        ]
        t.add_row(*cells, *([f"<= +{row.extra_s_emulated:.2f} s"] if r.emulated_comparison else []))
    c.print(t)


def _measured(c: Console, m: Measured, projection: tuple[TpRow, ...]) -> None:
    c.print(
        f"measured TTFT {m.ttft_s:.2f} s for {m.prompt_tokens:,} tokens: network share "
        f"{m.network_share:.1%} -> TTFT increase <= {m.increase_bound:.1%} "
        f"(emulated link: <= {m.increase_bound_emulated:.1%})"
    )
    t = Table(title="projection against TP size (computation split evenly)")
    for col in ("TP", "bytes x", "compute x", "TTFT", "increase <="):
        t.add_column(col, justify="right")
    for row in projection:
        t.add_row(
            str(row.tp),
            f"{row.bytes_factor:.2f}",
            f"{row.compute_factor:.2f}",
            f"{row.ttft_s:.2f} s",
            f"{row.increase_bound:.0%}",
        )
    c.print(t)


VERBS = (
    Verb(
        "estimate", "Estimate the network cost of tensor parallelism from a model's architecture.", _args, estimate_cmd
    ),
)
