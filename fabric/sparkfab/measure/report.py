"""Two benchmark runs side by side, against the estimate (the paper's Sections 8.3-8.5).

Tables: TTFT per test (for several requests: until the last first token) for both runs, the
increase and the estimate's bound; decode speed and its change; traffic per prompt token,
measured against estimated. Pictures: per-test traffic of both runs on one time axis with
the prefill band, TTFT bars, extra prefill time estimated against measured; all embedded
in one HTML page.
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sparkfab import userfile
from sparkfab.errors import Unavailable, UsageError
from sparkfab.measure import bench, records, sampler, traffic
from sparkfab.measure.estimate import Setup, bytes_per_token, extra_time
from sparkfab.measure.plots import pyplot
from sparkfab.measure.vllmstats import percentile
from sparkfab.outputs import PNG_METADATA


@dataclass(frozen=True)
class Run:
    """A bench run read back from its directory."""

    dir: Path
    meta: dict[str, Any]  # run.json as bench wrote it (a document: its keys are checked where they are read)
    rows: list[dict[str, Any]]  # requests.jsonl's records, each with its traffic folded in
    summary: records.Summary
    label: str
    skipped: int  # lines of requests.jsonl that could not be read (a killed bench leaves a torn one)


def link_gbps(run: Run, default: float) -> float:
    """The link speed a run measured, as bench recorded it: from the inventory (a lab's shaped
    rate) or from `--link-speed`; else `default`. A run's label is a name, never a speed."""
    for key in ("inventory", "link"):
        rec = run.meta.get(key)
        value = rec.get("link_gbps") if isinstance(rec, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e4:
            return float(value)
    return default


def served_tp(run: Run) -> int | None:
    inv = run.meta.get("inventory")
    tp = inv.get("tp") if isinstance(inv, dict) else None
    return tp if isinstance(tp, int) and not isinstance(tp, bool) and 0 < tp <= 1024 else None


def served_config(run: Run) -> Path | None:
    """The served checkpoint's config.json: bench's copy in the run, else the local directory
    the server loaded it from."""
    kept = run.dir / bench.MODEL_CONFIG
    if kept.is_file():
        return Path(kept)
    engine = run.meta.get("engine")
    roots = [engine.get("model_root") if isinstance(engine, dict) else None, run.meta.get("model")]
    for root in roots:
        if isinstance(root, str) and root.startswith("/") and (Path(root) / "config.json").is_file():
            return Path(root) / "config.json"
    return None


def load_run(path: Path) -> Run:
    """A bench run directory: its run.json and the well-formed records of requests.jsonl."""
    if not path.exists():
        raise Unavailable(f"{path}: no such run directory")
    if not (path / "run.json").is_file():
        raise UsageError(f"{path}: not a bench run directory (no run.json)")
    try:
        meta = userfile.loads(userfile.read_bytes(path / "run.json", "run.json").decode("utf-8"), path / "run.json")
    except UnicodeDecodeError:
        raise UsageError(f"{path}/run.json: not UTF-8 text") from None
    if not isinstance(meta, dict):
        raise UsageError(f"{path}/run.json: not a JSON object")
    records.check_meta(meta, path / "run.json")
    lines, skipped = records.read_lines(path / "requests.jsonl")
    rows = records.merge(lines)
    label = meta.get("label")
    return Run(path, meta, rows, records.summarize(rows), str(label)[:40] if label else path.name, skipped)


def samples(run: Run, test: str) -> dict[str, list[float]]:
    """Per-sample values behind the means: TTFT (seconds; for several requests the last first
    token of each round) and decode speed (tokens/s per request), measured rounds only."""
    ok = [r for r in run.rows if r["test"] == test and not r.get("warmup") and not r.get("error")]
    rounds = sorted({r["round"] for r in ok})
    several = any(r["index"] > 0 for r in ok)
    if several:
        ttft = [max(r["ttft_s"] for r in ok if r["round"] == k) for k in rounds]
    else:
        ttft = [r["ttft_s"] for r in ok]
    return {"ttft": ttft, "decode": [r["decode_tps"] for r in ok if r.get("decode_tps")]}


def dist(values: list[float]) -> dict[str, float] | None:
    """mean, the median and the p10..p90 spread, min, max and n of the samples."""
    if not values:
        return None
    return {
        "mean": sum(values) / len(values),
        "p10": percentile(values, 10),
        "median": percentile(values, 50),
        "p90": percentile(values, 90),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


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
    return {"ttft": ttft, "decode": decode, "bytes_per_token": bytes_rows}


def _plain(s: records.Stats | None) -> dict[str, Any] | None:
    """A summary statistic as tables.json holds it."""
    return asdict(s) if s else None


def _g(x: float) -> str:
    """Three significant digits, never rounded to nothing (0.0213, 21.3, 2.13e+03)."""
    return f"{x:.3g}"


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
    return [
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


def markdown(
    t: dict[str, list[dict[str, Any]]], la: str, lb: str | None, runs: list[Run] | None = None,
    assumption: str = "",
) -> str:  # fmt: skip
    """The tables as Markdown; with one run, the columns that compare are left out."""

    def table(title: str, rows: list[dict[str, str]]) -> list[str]:
        if not rows:
            return [title, "(no tests)"]
        cols = [c for c in rows[0] if lb is not None or c not in ("b", "increase", "change")]
        names = {"b": lb or "", "a": la}
        head = "| " + " | ".join(names.get(c, c) for c in cols) + " |"
        return [title, head, "|" + "---|" * len(cols), *("| " + " | ".join(r[c] for c in cols) + " |" for r in rows)]

    ttft = [
        {
            "test": r["test"],
            "a": _fmt(r["a"]),
            "b": _fmt(r["b"]),
            "increase": f"+{_g(r['increase_s'])} s ({r['increase']:+.1%})" if "increase_s" in r else "-",
            "estimate bound": f"<= +{_g(r['bound_s'])} s" if "bound_s" in r else "-",
        }
        for r in t["ttft"]
    ]
    decode = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], "tok/s"),
            "b": _fmt(r["b"], "tok/s"),
            "change": f"{r['change']:+.1%}" if "change" in r else "-",
        }
        for r in t["decode"]
    ]
    sizes = [x for r in t["bytes_per_token"] for x in (r["estimate"], (r["a"] or {}).get("mean")) if x]
    unit, scale = ("MB", 1e-6) if not sizes or max(sizes) >= 1e6 else ("kB", 1e-3)

    def versus(r: dict[str, Any]) -> str:
        vs = [f"{x['mean'] / r['estimate'] - 1:+.2%}" for x in (r["a"], r["b"]) if x and r["estimate"]]
        return " / ".join(vs) or "-"

    traffic = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], unit, scale),
            "b": _fmt(r["b"], unit, scale),
            "estimate": f"{_g(r['estimate'] * scale)} {unit}" if r["estimate"] else "-",
            "measured vs estimate": versus(r),
        }
        for r in t["bytes_per_token"]
    ]
    out: list[str] = []
    if runs:
        keys = [k for k, _ in metadata(runs[0])]
        rows = [{"": k, **{f"r{i}": dict(metadata(r))[k] for i, r in enumerate(runs)}} for k in keys]
        out += ["## Runs\n", "| | " + " | ".join(str(r.label) for r in runs) + " |", "|---|" + "---|" * len(runs)]
        out += ["| " + " | ".join(row.values()) + " |" for row in rows]
        out.append("")
    if assumption:
        out += [f"Estimate: {assumption}", ""]
    out += table("## TTFT (median, p10-p90 spread, mean; several requests: until the last first token)\n", ttft)
    out += table("\n## Decode speed (tokens/s after the first token, per request)\n", decode)
    out += table(
        "\n## Prefill traffic per prompt token (one host, sent; several requests: the round's bytes over all "
        "its prompt tokens)\n",
        traffic,
    )
    return "\n".join(out) + "\n"


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
    t = tables(a, b, setup)
    md = markdown(t, a.label, b.label if b else None, [x for x in (a, b) if x], assumption)
    pngs = plots(a, b, t, out)
    (out / "report.md").write_text(md)
    (out / "tables.json").write_text(json.dumps(t, indent=2))
    imgs = "".join(
        f'<figure><img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
        f"<figcaption>{html.escape(p.stem)}</figcaption></figure>"
        for p in pngs
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>sparkfab report</title><style>"
        "body{font-family:sans-serif;max-width:1000px;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px}img{max-width:100%}p.note{color:#444}</style></head><body>"
        f"<h1>{html.escape(a.label + (' vs ' + b.label if b else ''))}</h1>"
        f"{_md_tables_to_html(md)}{imgs}</body></html>"
    )
    (out / "report.html").write_text(page)
    return {"tables": t, "files": [str(p) for p in [out / "report.md", out / "report.html", *pngs]]}


def _md_tables_to_html(md: str) -> str:
    parts = []
    for line in md.splitlines():
        if line.startswith("## "):
            parts.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("Estimate: "):
            parts.append(f"<p class='note'>{html.escape(line)}</p>")
        elif line.startswith("|---"):
            continue
        elif line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            parts.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out, in_table = [], False
    for p in parts:
        if p.startswith("<tr>") and not in_table:
            out.append("<table>")
            in_table = True
        if not p.startswith("<tr>") and in_table:
            out.append("</table>")
            in_table = False
        out.append(p)
    return "".join(out) + ("</table>" if in_table else "")
