"""Two benchmark runs side by side, against the estimate (the paper's Sections 8.3-8.5).

Tables: TTFT per test (for several requests: until the last first token) for both runs, the
increase and the estimate's bound; decode speed and its change; traffic per prompt token and
per output token, measured against estimated. Pictures: per-test traffic of both runs on one time axis with
the prefill band, TTFT bars, extra prefill time estimated against measured; all embedded
in one HTML page.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable
from sparkfab.files.outputs import PNG_METADATA
from sparkfab.measure.bench import records, vllmstats
from sparkfab.measure.bench.rundir import RunDir
from sparkfab.measure.bench.runs import SavedRun, dist, link_gbps, samples
from sparkfab.measure.counters import sampler, traffic
from sparkfab.measure.estimate import Setup, bytes_per_token, extra_time
from sparkfab.measure.estimate import decode as decode_pass
from sparkfab.measure.estimate.gloo import gloo_prefill_bytes_per_token, gloo_view
from sparkfab.measure.estimate.plots import pyplot
from sparkfab.measure.report.reporttext import MIN_SAMPLES, THROUGHPUT, markdown, sections, ttft_verdict


def tables(a: SavedRun, b: SavedRun | None, setup: Setup | None) -> dict[str, list[dict[str, Any]]]:
    ttft, decode, bytes_rows, decode_bytes = [], [], [], []
    gloo = _in_lab(a)
    sa = a.summary.tests
    sb = b.summary.tests if b else {}
    speed_a, speed_b = link_gbps(a, 0), link_gbps(b, 1) if b else None
    for name, ta in sa.items():
        tb = sb.get(name)
        xa, xb = samples(a, name), samples(b, name) if b and tb else None
        x, y = dist(xa["ttft"]), dist(xb["ttft"]) if xb else None
        row: dict[str, Any] = {"test": name, "a": x, "b": y}
        if x and y:
            row["increase_s"] = y["mean"] - x["mean"]
            row["increase"] = row["increase_s"] / x["mean"]
        batch = replace(setup, batch=max(ta.requests, 1)) if setup else None
        if batch and speed_b:
            # what the link carries per prompt token: the lab engine's Gloo bytes (its fixed bytes
            # per ring step, headers and the first token's pass, as the sampler counts them and
            # the shaper accounts them), else the paper's formula for NCCL's payload
            carried = (
                gloo_prefill_bytes_per_token(batch, ta.prompt_tokens * batch.batch)
                if gloo and ta.prompt_tokens
                else bytes_per_token(batch)
            )
            row["bound_bytes_per_token"] = carried
            row["bound_s"] = extra_time(ta.prompt_tokens * ta.requests * carried, speed_a, speed_b)
        if x and y and speed_b and tb and ta.prefill_bytes_per_token and tb.prefill_bytes_per_token:
            # the increase split by a measurement: the time the link needs for the bytes it
            # carried in each mode (the round's prefill bytes at the mode's rate), and the rest
            # of TTFT, when this host's link was idle (compute, scheduling, waiting on peers)
            tokens = ta.prompt_tokens * ta.requests
            wire_a = ta.prefill_bytes_per_token.mean * tokens * 8 / (speed_a * 1e9)
            wire_b = tb.prefill_bytes_per_token.mean * tokens * 8 / (speed_b * 1e9)
            row["wire_s"] = {"a": wire_a, "b": wire_b}
            row["rest_s"] = {"a": x["mean"] - wire_a, "b": y["mean"] - wire_b}
        if x and y:
            row["verdict"] = ttft_verdict(row)
        ttft.append(row)
        da, db = dist(xa["decode"]), dist(xb["decode"]) if xb else None
        drow: dict[str, Any] = {"test": name, "a": da, "b": db}
        if da and db:
            drow["change"] = db["mean"] / da["mean"] - 1
        decode.append(drow)
        brow = {
            "test": name,
            "a": _plain(ta.prefill_bytes_per_token),
            "b": _plain(tb.prefill_bytes_per_token) if tb else None,
            "estimate": bytes_per_token(setup) if setup else None,
        }
        if gloo and batch and ta.prompt_tokens:
            # the lab's engine: Gloo's bytes beyond the payload and the first token's pass
            brow["gloo"] = gloo_prefill_bytes_per_token(batch, ta.prompt_tokens * batch.batch)
        bytes_rows.append(brow)
        decode_bytes.append(
            {
                "test": name,
                "a": _plain(ta.decode_bytes_per_token),
                "b": _plain(tb.decode_bytes_per_token) if tb else None,
                "estimate": _decode_estimate(batch, gloo) if batch else None,
                # received in the same windows: the collectives are symmetric, so sent less
                # received is what only this host sends (the engine head's per-step broadcasts)
                "a_rx": _plain(ta.decode_rx_bytes_per_token),
                "b_rx": _plain(tb.decode_rx_bytes_per_token) if tb else None,
            }
        )
    latency = [row for run in (a, b) if run for name in sa for row in [latency_row(run, name)] if row]
    return {
        "ttft": ttft,
        "decode": decode,
        "bytes_per_token": bytes_rows,
        "decode_bytes_per_token": decode_bytes,
        "latency": latency,
    }


def _decode_estimate(s: Setup, gloo: bool) -> float:
    """Bytes each Spark sends per output token in decode with `s.batch` requests decoding: the
    lab engine's Gloo collectives (`gloo`), else one pass's NCCL traffic over the tokens it
    checks (with MTP drafts: fewer are accepted, so a measured figure is higher)."""
    if gloo:
        return gloo_view(s).decode_bytes_per_token
    d = decode_pass(s)
    return d.bytes_per_pass / d.tokens_per_pass


def _in_lab(run: SavedRun) -> bool:
    """Whether `run` measured the lab (its engine's all-reduces go over Gloo, not NCCL)."""
    inv = run.meta.get("inventory")
    return isinstance(inv, dict) and inv.get("lab") is True


def latency_row(run: SavedRun, test: str) -> dict[str, Any] | None:
    """One run's requests of `test` in `vllm bench serve`'s terms (ms): p50 and p99 of TTFT, TPOT,
    ITL and E2EL, and the server's own mean TTFT (from /metrics around the measured rounds) with
    the client's minus the server's: the time outside the engine (network, queueing, client)."""
    mine = [r for r in run.rows if r["test"] == test]
    if not mine:
        return None
    res = vllmstats.test_result(mine)
    if not res["completed"]:
        return None
    row: dict[str, Any] = {"test": test, "run": run.label, "completed": res["completed"]}
    for key in THROUGHPUT:  # vllm bench serve's own names (over the test's wall time)
        row[key] = res[key]
    for m in vllmstats.METRICS:
        row[f"p50_{m}_ms"] = res[f"p50_{m}_ms"]
        row[f"p99_{m}_ms"] = res[f"p99_{m}_ms"]
    server = RunDir(run.dir).server().get(test) or {}
    if isinstance(server.get("server_mean_ttft_ms"), (int, float)):
        row["server_mean_ttft_ms"] = float(server["server_mean_ttft_ms"])
        row["client_minus_server_ttft_ms"] = res["mean_ttft_ms"] - row["server_mean_ttft_ms"]
    return row


def _plain(s: records.Stats | None) -> dict[str, Any] | None:
    """A summary statistic as tables.json holds it."""
    return asdict(s) if s else None


#: what each picture shows, by the file's stem (a traffic picture per test: `traffic_<test>`)
CAPTIONS = {
    "ttft": "Time to first token of each round, per test and run",
    "extra_prefill": "Extra prefill time at the lower link speed: the estimate's upper bound and the measurement",
}


def _caption(path: Path) -> str:
    if path.stem.startswith("traffic_"):
        return f"Traffic of one host during round 0 of {path.stem.removeprefix('traffic_')}: 1 ms and 20 ms averages"
    return CAPTIONS.get(path.stem, path.stem)


def _series_for(run: SavedRun, test: str) -> tuple[list[float], list[float], list[float], list[float], float] | None:
    """Round 0 of a test: 1 ms and 20 ms averages of the sent rate on a time axis that starts
    when the first request was sent, and when the last first token came."""
    rows = [r for r in run.rows if r["test"] == test and r["round"] == 0 and r.get("traffic_file")]
    if not rows:
        return None
    sr = traffic.series(sampler.read(RunDir(run.dir).sample_file(rows[0]["traffic_file"])))
    send = min(r["send_ns"] for r in rows)
    first = max(r["first_ns"] or send for r in rows)
    offset = (sr.times_ns[0] - send) / 1e9
    t, g = traffic.rates(sr, 0.001)
    t20, g20 = traffic.rates(sr, 0.020)
    return [x + offset for x in t], g, [x + offset for x in t20], g20, (first - send) / 1e9


def plots(a: SavedRun, b: SavedRun | None, t: dict[str, list[dict[str, Any]]], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    runs = [x for x in (a, b) if x]
    for test in a.summary.tests:
        series = [(r.label, s) for r in runs if (s := _series_for(r, test)) is not None]
        if not series:
            continue
        fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.6 * len(series)), dpi=110, sharex=True, squeeze=False)
        for ax, (lab, (tt, gg, t20, g20, prefill)) in zip(axes[:, 0], series, strict=True):
            ax.axvspan(0, prefill, color="grey", alpha=0.25, label="prefill (until the first token)")
            ax.plot(tt, gg, lw=0.7, label=f"{lab}: 1 ms averages")
            # a link (or a token bucket) passes whole bursts: the 1 ms averages swing around the rate
            ax.plot(t20, g20, lw=1.2, color="C1", drawstyle="steps-post", label=f"{lab}: 20 ms averages")
            ax.set_ylabel("sent (Gb/s)")
            ax.legend(loc="upper right", fontsize=8)
            ax.grid(True, alpha=0.3)
        axes[-1][0].set_xlabel("time since the request was sent (s)")
        fig.suptitle(f"{test}: traffic of one host, round 0")
        fig.tight_layout()
        paths.append(out / f"traffic_{re.sub(r'[^A-Za-z0-9_.-]', '_', test)}.png")
        fig.savefig(paths[-1], metadata=PNG_METADATA)
        plt.close(fig)
    names = [r["test"] for r in t["ttft"]]
    if not names:
        return paths
    paths.append(_ttft_plot(plt, runs, names, out))
    if b:
        fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
        meas = [r.get("increase_s", 0) for r in t["ttft"]]
        bound = [r.get("bound_s", 0) for r in t["ttft"]]
        ax.bar([i - 0.2 for i in range(len(names))], bound, 0.4, label="estimate (upper bound)", color="#bbbbbb")
        ax.bar([i + 0.2 for i in range(len(names))], meas, 0.4, label="measured", color="#d9822b")
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel(f"extra prefill time, {a.label} -> {b.label} (s)")
        ax.set_title("Extra prefill time: estimate against measurement")
        ax.legend()
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        paths.append(out / "extra_prefill.png")
        fig.savefig(paths[-1], metadata=PNG_METADATA)
        plt.close(fig)
    return paths


def write(a: SavedRun, b: SavedRun | None, setup: Setup | None, out: Path, assumption: str = "") -> dict[str, Any]:
    from sparkfab.render.text import fill_html

    t = tables(a, b, setup)
    runs = [x for x in (a, b) if x]
    md = markdown(t, a.label, b.label if b else None, runs, assumption)
    try:
        pngs = plots(a, b, t, out)
    except Unavailable as exc:  # matplotlib is an extra: the tables are the report
        sys.stderr.write(f"report: no figures ({exc})\n")
        pngs = []
    (out / "report.md").write_text(md, encoding="utf-8")
    (out / "tables.json").write_text(json.dumps(t, indent=2), encoding="utf-8")
    figures = [(f"data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}", _caption(p)) for p in pngs]
    page = fill_html(
        "report.html.j2",
        title=a.label + (" vs " + b.label if b else ""),
        sections=sections(t, a.label, b.label if b else None, runs),
        assumption=assumption,
        figures=figures,
    )
    (out / "report.html").write_text(page, encoding="utf-8")
    return {"tables": t, "files": [str(p) for p in [out / "report.md", out / "report.html", *pngs]]}


def log_axis(values: list[float]) -> bool:
    """Whether a TTFT axis is logarithmic: where the values span more than 10x (a 1 s test and a
    100 s test stay readable on one axis)."""
    positive = [x for x in values if x > 0]
    return bool(positive) and max(positive) / min(positive) > 10


def _ttft_plot(plt: Any, runs: list[SavedRun], names: list[str], out: Path) -> Path:
    """Each test's TTFT per run: a box where there are enough rounds for a spread, the points
    where there are not (said in the title), on a log axis where the tests span more than 10x."""
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    width = 0.76 / len(runs)
    few = False
    everything: list[float] = []
    for k, run in enumerate(runs):
        shift = (k - (len(runs) - 1) / 2) * width
        for i, name in enumerate(names):
            xs = samples(run, name)["ttft"]
            everything += xs
            if len(xs) >= MIN_SAMPLES:  # a box needs a spread; fewer samples are drawn as points
                box = ax.boxplot([xs], positions=[i + shift], widths=width * 0.9, patch_artist=True,
                                 showmeans=True, manage_ticks=False)  # fmt: skip
                for patch in box["boxes"]:
                    patch.set_facecolor(f"C{k}")
                    patch.set_alpha(0.5)
            elif xs:
                few = True
                ax.plot([i + shift] * len(xs), xs, "o", color=f"C{k}", alpha=0.8)
        ax.plot([], [], color=f"C{k}", lw=6, alpha=0.5, label=run.label)
    ax.set_xticks(range(len(names)), names)
    log = log_axis(everything)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("TTFT (s), each round" + (", log scale" if log else ""))
    title = "Time to first token over rounds (box p25-p75, whiskers 1.5 IQR, triangle mean)"
    if few:
        title += f"\nfewer than {MIN_SAMPLES} rounds: each round a point, no box"
    ax.set_title(title, fontsize=9)
    if any(str(run.label) for run in runs):  # a run without a label has no legend entry
        ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path = out / "ttft.png"
    fig.savefig(path, metadata=PNG_METADATA)
    plt.close(fig)
    return path
