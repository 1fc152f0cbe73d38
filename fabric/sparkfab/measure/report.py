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
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable, UsageError
from sparkfab.measure import bench, sampler, traffic
from sparkfab.measure.estimate import EMULATED_GBPS, Setup, bytes_per_token, extra_time
from sparkfab.outputs import PNG_METADATA

SPEEDS = {"200": 200.0, "100e": EMULATED_GBPS, "100": 100.0}


def load_run(path: Path) -> dict[str, Any]:
    """A bench run directory: its run.json and the well-formed records of requests.jsonl."""
    if not path.exists():
        raise Unavailable(f"{path}: no such run directory")
    if not (path / "run.json").is_file():
        raise UsageError(f"{path}: not a bench run directory (no run.json)")
    try:
        meta = json.loads((path / "run.json").read_bytes().decode("utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path}/run.json: not JSON ({str(exc)[:80]})") from None
    if not isinstance(meta, dict):
        raise UsageError(f"{path}/run.json: not a JSON object")
    lines, skipped = bench.read_lines(path / "requests.jsonl")
    rows = bench.merge(lines)
    label = meta.get("label")
    return {
        "dir": path,
        "meta": meta,
        "rows": rows,
        "summary": bench.summarize(rows),
        "label": str(label)[:40] if label else path.name,
        "skipped": skipped,
    }


def _ttft(t: dict[str, Any]) -> dict[str, float] | None:
    value: dict[str, float] | None = t["last_first_token_s"] if t["requests"] > 1 else t["ttft_s"]
    return value


def tables(a: dict[str, Any], b: dict[str, Any] | None, setup: Setup | None) -> dict[str, list[dict[str, Any]]]:
    ttft, decode, bytes_rows = [], [], []
    sa = a["summary"]["tests"]
    sb = b["summary"]["tests"] if b else {}
    speed_a, speed_b = SPEEDS.get(a["label"], 200.0), SPEEDS.get(b["label"], 100.0) if b else None
    for name, ta in sa.items():
        tb = sb.get(name)
        x, y = _ttft(ta), _ttft(tb) if tb else None
        row: dict[str, Any] = {"test": name, "a": x, "b": y}
        if x and y:
            row["increase_s"] = y["mean"] - x["mean"]
            row["increase"] = row["increase_s"] / x["mean"]
        if setup and speed_b:
            row["bound_s"] = extra_time(ta["prompt_tokens"] * ta["requests"] * bytes_per_token(setup), speed_a, speed_b)
        ttft.append(row)
        da, db = ta["decode_tps"], tb["decode_tps"] if tb else None
        drow: dict[str, Any] = {"test": name, "a": da, "b": db}
        if da and db:
            drow["change"] = db["mean"] / da["mean"] - 1
        decode.append(drow)
        brow = {
            "test": name,
            "a": ta["prefill_bytes_per_token"],
            "b": tb["prefill_bytes_per_token"] if tb else None,
            "estimate": bytes_per_token(setup) if setup else None,
        }
        bytes_rows.append(brow)
    return {"ttft": ttft, "decode": decode, "bytes_per_token": bytes_rows}


def _fmt(s: dict[str, float] | None, unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    if not s:
        return "-"
    return f"{s['mean'] * scale:.{digits}f} {unit} ({s['min'] * scale:.{digits}f}-{s['max'] * scale:.{digits}f})"


def markdown(t: dict[str, list[dict[str, Any]]], la: str, lb: str | None) -> str:
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
            "increase": f"+{r['increase_s']:.2f} s ({r['increase']:+.1%})" if "increase_s" in r else "-",
            "estimate bound": f"<= +{r['bound_s']:.2f} s" if "bound_s" in r else "-",
        }
        for r in t["ttft"]
    ]
    decode = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], "tok/s", digits=1),
            "b": _fmt(r["b"], "tok/s", digits=1),
            "change": f"{r['change']:+.1%}" if "change" in r else "-",
        }
        for r in t["decode"]
    ]
    traffic = [
        {
            "test": r["test"],
            "a": _fmt(r["a"], "MB", 1e-6),
            "b": _fmt(r["b"], "MB", 1e-6),
            "estimate": f"{r['estimate'] / 1e6:.2f} MB" if r["estimate"] else "-",
        }
        for r in t["bytes_per_token"]
    ]
    out = table("## TTFT (for several requests: until the last first token)\n", ttft)
    out += table("\n## Decode speed (tokens/s after the first token, per request)\n", decode)
    out += table("\n## Prefill traffic per prompt token (one host, sent)\n", traffic)
    return "\n".join(out) + "\n"


def _series_for(run: dict[str, Any], test: str) -> tuple[list[float], list[float], float] | None:
    rows = [r for r in run["rows"] if r["test"] == test and r["round"] == 0 and r.get("traffic_file")]
    if not rows:
        return None
    sr = traffic.series(sampler.read(run["dir"] / "traffic" / rows[0]["traffic_file"]))
    send = min(r["send_ns"] for r in rows)
    first = max(r["first_ns"] or send for r in rows)
    t, g = traffic.rates(sr, 0.001)
    offset = (sr.times_ns[0] - send) / 1e9
    return [x + offset for x in t], g, (first - send) / 1e9


def plots(a: dict[str, Any], b: dict[str, Any] | None, t: dict[str, list[dict[str, Any]]], out: Path) -> list[Path]:
    from sparkfab.measure.plots import _plt

    plt = _plt()
    paths = []
    runs = [x for x in (a, b) if x]
    for test in a["summary"]["tests"]:
        series = [(r["label"], s) for r in runs if (s := _series_for(r, test)) is not None]
        if not series:
            continue
        fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.6 * len(series)), dpi=110, sharex=True, squeeze=False)
        for ax, (lab, (tt, gg, prefill)) in zip(axes[:, 0], series, strict=True):
            ax.axvspan(0, prefill, color="grey", alpha=0.25, label="prefill (until the first token)")
            ax.plot(tt, gg, lw=0.7, label=f"{lab}: 1 ms averages")
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
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    bars = [(a["label"], "a")] + ([(b["label"], "b")] if b else [])
    width = 0.76 / len(bars)
    for k, (lab, key) in enumerate(bars):
        vals = [r[key]["mean"] if r[key] else 0 for r in t["ttft"]]
        shift = (k - (len(bars) - 1) / 2) * width
        ax.bar([i + shift for i in range(len(names))], vals, width, label=lab)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("TTFT, mean over rounds (s)")
    ax.set_title("Time to first token (several requests: the last first token)")
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
        ax.set_ylabel(f"extra prefill time, {a['label']} -> {b['label']} (s)")
        ax.set_title("Extra prefill time: estimate against measurement")
        ax.legend()
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        paths.append(out / "extra_prefill.png")
        fig.savefig(paths[-1], metadata=PNG_METADATA)
        plt.close(fig)
    return paths


def write(a: dict[str, Any], b: dict[str, Any] | None, setup: Setup | None, out: Path) -> dict[str, Any]:
    t = tables(a, b, setup)
    md = markdown(t, a["label"], b["label"] if b else None)
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
        "td,th{border:1px solid #ccc;padding:3px 8px}img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(a['label'] + (' vs ' + b['label'] if b else ''))}</h1>"
        f"{_md_tables_to_html(md)}{imgs}</body></html>"
    )
    (out / "report.html").write_text(page)
    return {"tables": t, "files": [str(p) for p in [out / "report.md", out / "report.html", *pngs]]}


def _md_tables_to_html(md: str) -> str:
    parts = []
    for line in md.splitlines():
        if line.startswith("## "):
            parts.append(f"<h2>{html.escape(line[3:])}</h2>")
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
