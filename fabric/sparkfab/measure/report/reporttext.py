"""The report as text: how its numbers, differences and verdicts are written, its tables
(`Section`, shared by the Markdown and the HTML page) and the Markdown itself, every cell of
which escapes what Markdown reads (a model name or label from a run file is text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkfab.measure.bench import vllmstats
from sparkfab.measure.bench.runs import SavedRun

#: how far above the estimate's upper bound a measured increase is flagged
FAR_ABOVE = 2.0
#: the throughputs `vllm bench serve` reports, by its own result keys, and how the report heads them
THROUGHPUT = {
    "request_throughput": "requests/s",
    "output_throughput": "output tok/s",
    "total_token_throughput": "total tok/s",
}


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


def increase_range(x: dict[str, float], y: dict[str, float]) -> tuple[float, float]:
    """The range the increase from `x` to `y` rests on: the slowest of `y`'s typical rounds less
    the fastest of `x`'s, and the other way round (p10 and p90 of each mode's rounds)."""
    return y["p10"] - x["p90"], y["p90"] - x["p10"]


def ttft_verdict(row: dict[str, Any]) -> str:
    """A TTFT increase judged first against the run-to-run spread (`verdict`), then against the
    estimate's bound (`bound_s`: the most the slower link adds): within the bound where the
    increase's range (`increase_range`) lies below it, above it where the range lies above,
    at the bound where the bound falls inside the range; with the range and the ratio it rests
    on."""
    x, y, bound = row.get("a"), row.get("b"), row.get("bound_s")
    first = verdict(x, y)
    if not x or not y or not first.startswith("outside") or not bound:
        return first
    lo, hi = increase_range(x, y)
    mean = row["increase_s"]
    rests = f"increase {_signed(mean)} s, p10-p90 range {_signed(lo)}..{_signed(hi)} s, bound {_g(bound)} s"
    wire, rest = row.get("wire_s"), row.get("rest_s")
    if wire and rest:
        rests += (
            f"; of the increase, the measured bytes at the two rates {_signed(wire['b'] - wire['a'])} s, "
            f"the rest of TTFT {_signed(rest['b'] - rest['a'])} s"
        )
    if hi < bound:
        half = " (below half of it)" if hi < bound / 2 else ""
        return f"within the bound{half}: {mean / bound:.2f}x ({rests})"
    if lo > bound:
        return f"above the bound: {mean / bound:.2f}x ({rests})"
    return f"at the bound: {mean / bound:.2f}x ({rests})"


def _fmt(s: dict[str, float] | None, unit: str = "s", scale: float = 1.0) -> str:
    if not s:
        return "-"
    if "median" not in s:  # a summary statistic without the samples (traffic per token)
        return f"{_g(s['mean'] * scale)} {unit} ({_g(s['min'] * scale)}-{_g(s['max'] * scale)}, n={s.get('n', '?')})"
    return (
        f"{_g(s['median'] * scale)} {unit} (p10 {_g(s['p10'] * scale)}, p90 {_g(s['p90'] * scale)}, "
        f"mean {_g(s['mean'] * scale)}, n={s['n']})"
    )


def metadata(run: SavedRun) -> list[tuple[str, str]]:
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
        ("rounds", f"{m.get('rounds', '?')} (+{_warmup(m)}), seed {m.get('seed', '?')}"),
        ("date", str(m.get("date", "not recorded"))),
        ("sparkfab", str(m.get("sparkfab_version", "?"))),
    ]
    pairs: dict[str, Any] = dict(extra or {})
    shown = sorted(pairs.items())[:MAX_METADATA]
    text = ", ".join(f"{k}={v}" for k, v in shown)
    text += f", ... and {len(pairs) - len(shown)} more" if len(pairs) > len(shown) else ""
    return rows + ([("metadata", text)] if pairs else [])


#: the metadata pairs a report shows per run (the run file keeps them all)
MAX_METADATA = 50


@dataclass(frozen=True)
class Section:
    """One table of the report, as both the Markdown and the HTML page show it."""

    title: str
    columns: list[str]
    rows: list[list[str]]


def sections(
    t: dict[str, list[dict[str, Any]]], la: str, lb: str | None, runs: list[SavedRun] | None = None,
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
            "verdict": ttft_verdict(r),
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
    prefill_traffic = _traffic_rows(t["bytes_per_token"])
    decode_traffic = _traffic_rows(t.get("decode_bytes_per_token", []))
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
            prefill_traffic,
        )
    )
    if any(r["a"] or r["b"] for r in t.get("decode_bytes_per_token", [])):
        out.append(
            table(
                "Decode traffic per output token (one host, sent and received, from the round's last first token "
                "to its last token; the estimate at the test's requests decoding together)",
                decode_traffic,
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


def _traffic_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Bytes per token, measured in both runs against the estimate, in one unit per table."""
    sizes = [x for r in rows for x in (r["estimate"], (r["a"] or {}).get("mean")) if x]
    unit, scale = ("MB", 1e-6) if not sizes or max(sizes) >= 1e6 else ("kB", 1e-3)

    def versus(r: dict[str, Any], key: str = "estimate") -> str:
        vs = [f"{x['mean'] / r[key] - 1:+.2%}" for x in (r["a"], r["b"]) if x and r.get(key)]
        return " / ".join(vs) or "-"

    # the lab's engine (Gloo over TCP): its own estimate beside the paper's, where a run has one
    gloo = any(r.get("gloo") for r in rows)
    out = []
    for r in rows:
        row = {
            "test": r["test"],
            "a": _fmt(r["a"], unit, scale),
            "b": _fmt(r["b"], unit, scale),
            "estimate": f"{_g(r['estimate'] * scale)} {unit}" if r["estimate"] else "-",
            "measured vs estimate": versus(r),
        }
        if gloo:
            row["Gloo estimate"] = f"{_g(r['gloo'] * scale)} {unit}" if r.get("gloo") else "-"
            row["measured vs Gloo"] = versus(r, "gloo")
        if any(x.get("a_rx") for x in rows):
            row["received vs estimate"] = versus({"a": r.get("a_rx"), "b": r.get("b_rx"), "estimate": r["estimate"]})
            row["sent - received"] = _sent_less_received(r, unit, scale)
        out.append(row)
    return out


def _sent_less_received(r: dict[str, Any], unit: str, scale: float) -> str:
    """What only this host sends per token (sent less received in the same windows): the
    collectives send and receive alike, an engine head's broadcasts to its workers do not."""
    vs = [
        f"{_signed((sent['mean'] - got['mean']) * scale)} {unit}"
        for sent, got in ((r["a"], r.get("a_rx")), (r["b"], r.get("b_rx")))
        if sent and got
    ]
    return " / ".join(vs) or "-"


#: the longest text one cell of the Markdown report holds (a run's metadata of 50,000 keys is not a table)
MAX_CELL = 2000


def _cell(text: str) -> str:
    """A Markdown table cell: its pipes escaped and its line breaks (and other control characters)
    made spaces, so a model name or label from a run file cannot forge a row or a section; cut
    at MAX_CELL characters."""
    flat = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in str(text)).replace("|", "\\|")
    return flat if len(flat) <= MAX_CELL else flat[: MAX_CELL - 1] + "…"


def markdown(
    t: dict[str, list[dict[str, Any]]], la: str, lb: str | None, runs: list[SavedRun] | None = None,
    assumption: str = "",
) -> str:  # fmt: skip
    """The tables as Markdown."""
    out: list[str] = [f"Estimate: {assumption}", ""] if assumption and not runs else []
    for i, sec in enumerate(sections(t, la, lb, runs)):
        out += [f"## {_cell(sec.title)}", ""]
        if not sec.rows:
            out.append("(no tests)")
        else:
            out += ["| " + " | ".join(map(_cell, sec.columns)) + " |", "|" + "---|" * len(sec.columns)]
            out += ["| " + " | ".join(map(_cell, row)) + " |" for row in sec.rows]
        out.append("")
        if i == 0 and runs and assumption:
            out += [f"Estimate: {assumption}", ""]
    return "\n".join(out)


def _warmup(meta: dict[str, Any]) -> str:
    """The run's warm-up: before the tests it names since #59, before every test earlier (no
    `warmup_of`)."""
    n = meta.get("warmup", 0)
    of = meta.get("warmup_of")
    of = [of] if isinstance(of, str) else of  # a run between 78cbf43 and c71805f names one test
    if isinstance(of, list) and n:
        return f"{n} warm-up before {', '.join(str(x) for x in of)}"
    return f"{n} warm-up" + (" each" if n else "")
