"""A bench run read back from its directory (`rundir`), and what the
report reads from it: the link speed and TP it measured, the served checkpoint's config, and the
per-sample values behind its means."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable, UsageError
from sparkfab.files import userfile
from sparkfab.measure.bench import records, served
from sparkfab.measure.bench.rundir import MAX_REQUESTS_BYTES, RunDir
from sparkfab.measure.bench.vllmstats import percentile
from sparkfab.spark import FLIP_SPEEDS, SPEEDS


@dataclass(frozen=True)
class SavedRun:
    """A bench run read back from its directory."""

    dir: Path
    meta: dict[str, Any]  # run.json as bench wrote it (a document: its keys are checked where they are read)
    rows: list[dict[str, Any]]  # requests.jsonl's records, each with its traffic folded in
    summary: records.Summary
    label: str
    skipped: int  # lines of requests.jsonl that could not be read (a killed bench leaves a torn one)


#: the link a report's first and second run were at where bench recorded none: the two modes a
#: flip goes between, at the rates they stand for (spark's table)
PAIR_GBPS: tuple[float, ...] = tuple(SPEEDS[mode].nominal_gbps for mode in FLIP_SPEEDS)


def link_gbps(run: SavedRun, position: int) -> float:
    """The link speed a run measured, as bench recorded it: from the inventory (a lab's shaped
    rate) or from `--link-speed`; else that of the report's `position` (0: the first run, 1: the
    second) in `PAIR_GBPS`. A run's label is a name, never a speed."""
    for key in ("inventory", "link"):
        rec = run.meta.get(key)
        value = rec.get("link_gbps") if isinstance(rec, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e4:
            return float(value)
    return PAIR_GBPS[position]


def served_tp(run: SavedRun) -> int | None:
    inv = run.meta.get("inventory")
    tp = inv.get("tp") if isinstance(inv, dict) else None
    return tp if isinstance(tp, int) and not isinstance(tp, bool) and 0 < tp <= 1024 else None


def served_config(run: SavedRun) -> Path | None:
    """The served checkpoint's config.json (`served.config_of`)."""
    return served.config_of(RunDir(run.dir), run.meta.get("model"))


def load_run(path: Path) -> SavedRun:
    """A bench run directory (its run.json and the well-formed records of requests.jsonl), or the
    result file of `vllm bench serve --save-result --save-detailed`."""
    if not path.exists():
        raise Unavailable(f"{path}: no such run directory")
    if path.is_file():
        return from_vllm_result(path)
    run = RunDir(path)
    if not run.holds_a_run():
        raise UsageError(f"{path}: not a bench run directory (no run.json)")
    meta = run.meta()
    lines, skipped = run.lines()
    rows = records.merge(lines)
    label = meta.get("label")
    return SavedRun(path, meta, rows, records.summarize(rows), str(label)[:40] if label else path.name, skipped)


def samples(run: SavedRun, test: str) -> dict[str, list[float]]:
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


def from_vllm_result(path: Path) -> SavedRun:
    """A `vllm bench serve --save-result --save-detailed` file as a run of one test (named after
    the file): each request a round of its own, its TTFT, inter-token gaps and end-to-end latency
    as vLLM measured them (seconds, from the request's send), no traffic."""
    try:
        doc = userfile.loads(userfile.read_bytes(path, "result file", MAX_REQUESTS_BYTES).decode("utf-8"), path)
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    if not isinstance(doc, dict) or "model_id" not in doc:
        raise UsageError(f"{path}: neither a bench run directory nor a `vllm bench serve --save-result` file")
    lists = {k: doc.get(k) for k in ("ttfts", "itls", "latencies", "input_lens", "output_lens")}
    if not all(isinstance(v, list) for v in lists.values()):
        raise UsageError(f"{path}: the file has no per-request lists: run `vllm bench serve` with --save-detailed")
    found = doc.get("errors")
    errors: list[Any] = found if isinstance(found, list) else []
    test = path.stem
    rows = []
    for i, (ttft, itl, e2el, n_in, n_out) in enumerate(zip(*lists.values(), strict=False)):
        error = errors[i] if i < len(errors) and errors[i] else None
        row: dict[str, Any] = {
            "test": test, "round": i, "index": 0, "warmup": False, "prompt_tokens_planned": n_in,
            "prompt_tokens": n_in, "completion_tokens": n_out, "send_ns": 0, "error": error,
        }  # fmt: skip
        if not error and isinstance(ttft, (int, float)) and isinstance(e2el, (int, float)):
            first, times = int(ttft * 1e9), [float(ttft)]
            for gap in itl if isinstance(itl, list) else []:
                times.append(times[-1] + float(gap))
            row.update(
                first_ns=first,
                last_ns=int(e2el * 1e9),
                chunks=[[int(t * 1e9), 1] for t in times],
                ttft_s=float(ttft),
                decode_tps=(n_out - 1) / (e2el - ttft)
                if isinstance(n_out, int) and n_out > 1 and e2el > ttft
                else None,
            )
        else:
            row.update(first_ns=None, ttft_s=None, decode_tps=None, error=error or "no first token")
        rows.append(row)
    label = doc.get("label") or path.stem
    meta = {
        "label": label,
        "model": doc.get("model_id"),
        "engine": {"name": f"vllm bench serve ({doc.get('backend', '?')})", "version": None},
        "url": doc.get("base_url", "not recorded"),
        "date": doc.get("date", "not recorded"),
        "plan": [
            {"name": test, "requests": 1, "prompt_tokens": max((r["prompt_tokens"] or 0 for r in rows), default=0)}
        ],
        "rounds": len(rows),
        "sparkfab_version": "-",
    }
    return SavedRun(path.parent, meta, rows, records.summarize(rows), str(label)[:40], 0)
