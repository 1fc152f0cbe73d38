"""Two benchmark runs side by side, against the estimate (the paper's Sections 8.3-8.5).

Tables: TTFT per test (for several requests: until the last first token) for both runs, the
increase and the estimate's bound; decode speed and its change; traffic per prompt token,
measured against estimated. Pictures: per-test traffic of both runs on one time axis with
the prefill band, TTFT bars, extra prefill time estimated against measured; all embedded
in one HTML page.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable
from sparkfab.measure import records, sampler, traffic, vllmstats
from sparkfab.measure.estimate import Setup, bytes_per_token, extra_time
from sparkfab.measure.plots import pyplot
from sparkfab.measure.runs import Run, dist, link_gbps, samples, server_side
from sparkfab.outputs import PNG_METADATA


def tables(a: Run, b: Run | None, setup: Setup | None) -> dict[str, list[dict[str, Any]]]:
    ttft, decode, bytes_rows = [], [], []
    sa = a.summary.tests
    sb = b.summary.tests if b else {}
    speed_a, speed_b = link_gbps(a, 200.0), link_gbps(b, 100.0) if b else None
    for name, ta in sa.items():
        tb = sb.get(name)
        xa, xb = samples(a, name), samples(b, name) if b and tb else None
        x, y = dist(xa["ttft"]), dist(xb["ttft"]) if xb else None
        row: dict[str, Any] = {"test": name, "a": x, "b": y}
        if x and y:
            row["increase_s"] = y["mean"] - x["mean"]
            row["increase"] = row["increase_s"] / x["mean"]
        if setup and speed_b:
            row["bound_s"] = extra_time(ta.prompt_tokens * ta.requests * bytes_per_token(setup), speed_a, speed_b)
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
        bytes_rows.append(brow)
    latency = [row for run in (a, b) if run for name in sa for row in [latency_row(run, name)] if row]
    return {"ttft": ttft, "decode": decode, "bytes_per_token": bytes_rows, "latency": latency}


#: how far above the estimate's upper bound a measured increase is flagged
FAR_ABOVE = 2.0
#: the throughputs `vllm bench serve` reports, by its own result keys, and how the report heads them
THROUGHPUT = {
    "request_throughput": "requests/s",
    "output_throughput": "output tok/s",
    "total_token_throughput": "total tok/s",
}


def latency_row(run: Run, test: str) -> dict[str, Any] | None:
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
    server = server_side(run.dir).get(test) or {}
    if isinstance(server.get("server_mean_ttft_ms"), (int, float)):
        row["server_mean_ttft_ms"] = float(server["server_mean_ttft_ms"])
        row["client_minus_server_ttft_ms"] = res["mean_ttft_ms"] - row["server_mean_ttft_ms"]
    return row


def _plain(s: records.Stats | None) -> dict[str, Any] | None:
    """A summary statistic as tables.json holds it."""
    return asdict(s) if s else None


def _g(x: float) -> str:
    """Three significant digits, never rounded to nothing (0.0213, 21.3); from a thousand on,
    whole numbers with separators (2,130 and 10,700 ms, not 2.13e+03 and 1.07e+04)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _signed(x: float) -> str:
    """A difference with its own sign: +0.61, -2.79 (never +-2.79)."""
    return f"{'-' if x < 0 else '+'}{_g(abs(x))}"


#: samples per mode below which a difference between two modes gets no verdict
MIN_SAMPLES = 3


def verdict(x: dict[str, float] | None, y: dict[str, float] | None) -> str:
    """A difference between two modes against the run-to-run spread: within noise where the
    two modes' samples overlap (min..max), outside it where they do not; no verdict from fewer
    than MIN_SAMPLES samples of either mode (two points make no spread)."""
    if not x or not y:
        return "-"
    n = int(min(x["n"], y["n"]))
    if n < MIN_SAMPLES:
        return f"no verdict (n={n}: at least {MIN_SAMPLES} per mode)"
    if max(x["min"], y["min"]) <= min(x["max"], y["max"]):
        return "within noise (the modes' ranges overlap)"
    return "outside the run-to-run spread"


def _fmt(s: dict[str, float] | None, unit: str = "s", scale: float = 1.0) -> str:
    if not s:
        return "-"
    if "median" not in s:  # a summary statistic without the samples (traffic per token)
        return f"{_g(s['mean'] * scale)} {unit} ({_g(s['min'] * scale)}-{_g(s['max'] * scale)}, n={s.get('n', '?')})"
    return (
        f"{_g(s['median'] * scale)} {unit} (p10 {_g(s['p10'] * scale)}, p90 {_g(s['p90'] * scale)}, "
        f"mean {_g(s['mean'] * scale)}, n={s['n']})"
    )


def metadata(run: Run) -> list[tuple[str, str]]:
    """What a reader needs to know about a run: model, engine, URL, cluster, link, tool, date."""
    m = run.meta
    engine = m.get("engine") or {}
    inv = m.get("inventory") or {}
    cluster = f"{inv.get('cluster')} ({inv.get('path')}), link {inv.get('link_speed')}" if inv else "not recorded"
    if inv.get("lab"):
        cluster += f": lab, fabric veths shaped to {inv.get('link_rate')}"
    if inv.get("instance"):
        cluster += f"; instance {inv.get('instance')} at TP{inv.get('tp')}"
    extra = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    rows = [
        ("label", str(run.label)),
        ("model", str(m.get("model", "?"))),
        ("engine", f"{engine.get('name') or 'unknown'} {engine.get('version') or ''}".strip()),
        ("URL", str(m.get("url", "?"))),
        ("cluster", cluster),
        ("plan", ", ".join(f"{t['name']} {t['requests']}x{t['prompt_tokens']:,}" for t in m.get("plan", []))),
        ("rounds", f"{m.get('rounds', '?')} (+{m.get('warmup', 0)} warm-up), seed {m.get('seed', '?')}"),
        ("date", str(m.get("date", "not recorded"))),
        ("sparkfab", str(m.get("sparkfab_version", "?"))),
    ]
    return rows + ([("metadata", ", ".join(f"{k}={v}" for k, v in sorted(extra.items())))] if extra else [])


@dataclass(frozen=True)
class Section:
    """One table of the report, as both the Markdown and the HTML page show it."""

    title: str
    columns: list[str]
    rows: list[list[str]]


def sections(
    t: dict[str, list[dict[str, Any]]], la: str, lb: str | None, runs: list[Run] | None = None,
) -> list[Section]:  # fmt: skip
    """The report's tables; with one run, the columns that compare are left out."""

    def table(title: str, rows: list[dict[str, str]]) -> Section:
        cols = [c for c in rows[0] if lb is not None or c not in ("b", "increase", "change", "verdict")] if rows else []
        names = {"b": lb or "", "a": la}
        return Section(title, [names.get(c, c) for c in cols], [[r[c] for c in cols] for r in rows])

    def bound(r: dict[str, Any]) -> str:
        if "bound_s" not in r:
            return "-"
        text = f"<= +{_g(r['bound_s'])} s"
        if r.get("increase_s", 0) > FAR_ABOVE * r["bound_s"] > 0:
            text += f" (measured {r['increase_s'] / r['bound_s']:.1f}x the bound: more than the network explains)"
        return text

    ttft = [
        {
            "test": r["test"],
            "a": _fmt(r["a"]),
            "b": _fmt(r["b"]),
            "increase": f"{_signed(r['increase_s'])} s ({r['increase']:+.1%})" if "increase_s" in r else "-",
            "verdict": verdict(r["a"], r["b"]),
            "estimate bound": bound(r),
        }
        for r in t["ttft"]
    ]
    decode = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], "tok/s"),
            "b": _fmt(r["b"], "tok/s"),
            "change": f"{r['change']:+.1%}" if "change" in r else "-",
            "verdict": verdict(r["a"], r["b"]),
        }
        for r in t["decode"]
    ]
    sizes = [x for r in t["bytes_per_token"] for x in (r["estimate"], (r["a"] or {}).get("mean")) if x]
    unit, scale = ("MB", 1e-6) if not sizes or max(sizes) >= 1e6 else ("kB", 1e-3)

    def versus(r: dict[str, Any]) -> str:
        vs = [f"{x['mean'] / r['estimate'] - 1:+.2%}" for x in (r["a"], r["b"]) if x and r["estimate"]]
        return " / ".join(vs) or "-"

    traffic_rows = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], unit, scale),
            "b": _fmt(r["b"], unit, scale),
            "estimate": f"{_g(r['estimate'] * scale)} {unit}" if r["estimate"] else "-",
            "measured vs estimate": versus(r),
        }
        for r in t["bytes_per_token"]
    ]
    latency = [
        {
            "test": r["test"],
            "run": r["run"],
            **{head: _g(r[key]) if key in r else "-" for key, head in THROUGHPUT.items()},
            **{f"{m.upper()} p50 / p99": f"{_g(r[f'p50_{m}_ms'])} / {_g(r[f'p99_{m}_ms'])}" for m in vllmstats.METRICS},
            "server TTFT (mean)": _g(r["server_mean_ttft_ms"]) if "server_mean_ttft_ms" in r else "-",
            "client - server TTFT": _g(r["client_minus_server_ttft_ms"]) if "client_minus_server_ttft_ms" in r else "-",
        }
        for r in t.get("latency", [])
    ]
    out: list[Section] = []
    if runs:
        metas = [dict(metadata(r)) for r in runs]
        keys = list(metas[0])
        out.append(Section("Runs", ["", *(str(r.label) for r in runs)], [[k, *(m[k] for m in metas)] for k in keys]))
    out.append(table("TTFT (median, p10-p90 spread, mean; several requests: until the last first token)", ttft))
    out.append(table("Decode speed (tokens/s after the first token, per request)", decode))
    out.append(
        table(
            "Prefill traffic per prompt token (one host, sent; several requests: the round's bytes over all "
            "its prompt tokens)",
            traffic_rows,
        )
    )
    if latency:
        out.append(
            Section(
                "Latency per request in vllm bench serve's terms (ms; measured rounds; server: its /metrics)",
                list(latency[0]),
                [list(r.values()) for r in latency],
            )
        )
    return out


def markdown(
    t: dict[str, list[dict[str, Any]]], la: str, lb: str | None, runs: list[Run] | None = None,
    assumption: str = "",
) -> str:  # fmt: skip
    """The tables as Markdown."""
    out: list[str] = [f"Estimate: {assumption}", ""] if assumption and not runs else []
    for i, sec in enumerate(sections(t, la, lb, runs)):
        out += [f"## {sec.title}", ""]
        if not sec.rows:
            out.append("(no tests)")
        else:
            out += ["| " + " | ".join(sec.columns) + " |", "|" + "---|" * len(sec.columns)]
            out += ["| " + " | ".join(row) + " |" for row in sec.rows]
        out.append("")
        if i == 0 and runs and assumption:
            out += [f"Estimate: {assumption}", ""]
    return "\n".join(out)


#: what each picture shows, by the file's stem (a traffic picture per test: `traffic_<test>`)
CAPTIONS = {
    "ttft": "Time to first token of each round, per test and run",
    "extra_prefill": "Extra prefill time at the lower link speed: the estimate's upper bound and the measurement",
}


def _caption(path: Path) -> str:
    if path.stem.startswith("traffic_"):
        return f"Traffic of one host during round 0 of {path.stem.removeprefix('traffic_')}: 1 ms and 20 ms averages"
    return CAPTIONS.get(path.stem, path.stem)


def _series_for(run: Run, test: str) -> tuple[list[float], list[float], list[float], list[float], float] | None:
    """Round 0 of a test: 1 ms and 20 ms averages of the sent rate on a time axis that starts
    when the first request was sent, and when the last first token came."""
    rows = [r for r in run.rows if r["test"] == test and r["round"] == 0 and r.get("traffic_file")]
    if not rows:
        return None
    sr = traffic.series(sampler.read(run.dir / "traffic" / rows[0]["traffic_file"]))
    send = min(r["send_ns"] for r in rows)
    first = max(r["first_ns"] or send for r in rows)
    offset = (sr.times_ns[0] - send) / 1e9
    t, g = traffic.rates(sr, 0.001)
    t20, g20 = traffic.rates(sr, 0.020)
    return [x + offset for x in t], g, [x + offset for x in t20], g20, (first - send) / 1e9


def plots(a: Run, b: Run | None, t: dict[str, list[dict[str, Any]]], out: Path) -> list[Path]:
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
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    width = 0.76 / len(runs)
    for k, run in enumerate(runs):
        data = [samples(run, name)["ttft"] or [0.0] for name in names]
        shift = (k - (len(runs) - 1) / 2) * width
        box = ax.boxplot(
            data, positions=[i + shift for i in range(len(names))], widths=width * 0.9, patch_artist=True,
            showmeans=True, manage_ticks=False,
        )  # fmt: skip
        for patch in box["boxes"]:
            patch.set_facecolor(f"C{k}")
            patch.set_alpha(0.5)
        ax.plot([], [], color=f"C{k}", lw=6, alpha=0.5, label=run.label)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("TTFT (s), each round")
    ax.set_title("Time to first token: distribution over rounds (box p25-p75, whiskers 1.5 IQR, triangle mean)")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    paths.append(out / "ttft.png")
    fig.savefig(paths[-1], metadata=PNG_METADATA)
    plt.close(fig)
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


def write(a: Run, b: Run | None, setup: Setup | None, out: Path, assumption: str = "") -> dict[str, Any]:
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
