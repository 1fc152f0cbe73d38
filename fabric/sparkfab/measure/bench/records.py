"""What a bench run's records hold: the shape of a requests.jsonl record and of run.json (what
the report reads of them), each request's traffic record folded into it, and the per-test
summary (summary.json, the report). The files themselves are read and written by `rundir`."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sparkfab.errors import UsageError
from sparkfab.measure.bench import vllmstats


def prefill_per_token(ok: list[dict[str, Any]]) -> list[float]:
    """Sent bytes per prompt token, per round: the round's prefill bytes over all its prompt tokens
    (older runs without the round's total: per request)."""
    out = []
    for k in sorted({r["round"] for r in ok}):
        mine = [r for r in ok if r["round"] == k]
        if all("round_prefill_bytes" in r for r in mine):
            out.append(mine[0]["round_prefill_bytes"] / sum(r["prompt_tokens_planned"] for r in mine))
        else:
            out += [r["prefill_bytes"] / r["prompt_tokens_planned"] for r in mine if "prefill_bytes" in r]
    return out


def decode_per_token(ok: list[dict[str, Any]], key: str = "round_decode_bytes") -> list[float]:
    """Sent bytes per output token in decode, per round: the round's bytes from its last first
    token to its last token over the tokens streamed in that window (runs before it: none);
    with `key` round_decode_rx_bytes, the bytes received in the same window."""
    out = []
    for k in sorted({r["round"] for r in ok}):
        first = next(r for r in ok if r["round"] == k)
        tokens = first.get("round_decode_tokens")
        if isinstance(tokens, (int, float)) and tokens > 0 and isinstance(first.get(key), (int, float)):
            out.append(first[key] / tokens)
    return out


@dataclass(frozen=True)
class Stats:
    mean: float
    min: float
    max: float
    n: int


def _stats(xs: list[float]) -> Stats | None:
    return Stats(statistics.fmean(xs), min(xs), max(xs), len(xs)) if xs else None


@dataclass(frozen=True)
class TestSummary:
    """One test of a run, over its measured rounds (warm-up left out)."""

    __test__ = False  # a product class whose name pytest would otherwise collect

    requests: int
    prompt_tokens: int
    ttft_s: Stats | None
    last_first_token_s: Stats | None  # per round: the last request's first token
    decode_tps: Stats | None  # per round: the mean decode speed of its requests
    first_token_order: list[list[int]]  # per round: request indexes in the order their first token came
    prefill_bytes_per_token: Stats | None
    decode_bytes_per_token: Stats | None
    prefill_gbps: Stats | None
    decode_gbps: Stats | None
    errors: list[str]
    vllm: dict[str, Any]  # the same requests in vllm bench serve's terms (ms; lists left to result_<test>.json)
    #: what the host received per output token in the same decode windows (a run that sampled rx)
    decode_rx_bytes_per_token: Stats | None = None

    @property
    def ttft(self) -> Stats | None:
        """The test's TTFT: with several requests at once, when the last of them got its first token."""
        return self.last_first_token_s if self.requests > 1 else self.ttft_s


@dataclass(frozen=True)
class Summary:
    """A run's summary; `to_dict()` is summary.json."""

    tests: dict[str, TestSummary]
    requests: int
    errors: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def merge(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Request records with their traffic records (written after the round) folded in."""
    extra = {(x["test"], x["round"], x["index"]): x for x in lines if x.get("kind") == "traffic"}
    rows = [x for x in lines if x.get("kind") != "traffic"]
    for r in rows:
        t = extra.get((r["test"], r["round"], r["index"]))
        if t:
            r.update({k: v for k, v in t.items() if k not in ("kind", "test", "round", "index")})
    return rows


def _num(v: Any) -> bool:
    """A finite number (JSON has no NaN, but Python's reader takes NaN and Infinity)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ns(v: Any) -> bool:
    """A monotonic time in nanoseconds, as bench writes it (a machine's uptime, at most a century)."""
    return _whole(v) and 0 <= v < 2**62


def _sample_name(v: Any) -> bool:
    """A sample file's name inside the run's traffic/ folder, as bench writes it (never a path)."""
    return v is None or (
        isinstance(v, str) and 0 < len(v) < 256 and "/" not in v and "\0" not in v and v not in (".", "..")
    )


def _chunks(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(c, list) and len(c) == 2 and _ns(c[0]) and _whole(c[1]) and c[1] >= 0 for c in v
    )


#: every field of a request record that the report reads, and what it must hold when present
#: (a record bench wrote always passes; anything else is a torn or foreign line, skipped and counted)
_FIELDS: dict[str, Any] = {
    "prompt_tokens_planned": lambda v: _whole(v) and v >= 1,
    "output_tokens_planned": lambda v: _whole(v) and v >= 1,
    "send_ns": _ns,
    "first_ns": lambda v: v is None or _ns(v),
    "last_ns": lambda v: v is None or _ns(v),
    "server_first_ns": lambda v: v is None or _ns(v),
    "prompt_tokens": lambda v: v is None or (_whole(v) and v >= 0),
    "completion_tokens": lambda v: v is None or (_whole(v) and v >= 0),
    "chunks": _chunks,
    "warmup": lambda v: isinstance(v, bool),
    "label": lambda v: v is None or isinstance(v, str),
    "ttft_s": lambda v: v is None or (_num(v) and 0 <= v < 1e7),
    "decode_tps": lambda v: v is None or (_num(v) and 0 <= v < 1e9),
    "traffic_file": _sample_name,
}


def well_formed(rec: Any) -> bool:
    """A record of requests.jsonl as bench writes it (a request's, or its traffic's)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("test"), str):
        return False
    if not (_whole(rec.get("round")) and _whole(rec.get("index"))):
        return False
    if rec.get("kind") == "traffic":
        return _sample_name(rec.get("traffic_file")) and all(
            _num(v) for k, v in rec.items() if k.endswith(("_bytes", "_gbps"))
        )
    if not isinstance(rec.get("error"), str | None) or "send_ns" not in rec:
        return False
    if not all(check(rec[k]) for k, check in _FIELDS.items() if k in rec):
        return False
    if rec.get("error"):
        return True
    return _num(rec.get("ttft_s")) and _ns(rec.get("first_ns"))


def _plan_row(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and isinstance(v.get("name"), str)
        and all(_whole(v.get(k)) and v[k] >= 0 for k in ("requests", "prompt_tokens"))
    )


#: what the report reads of run.json, and the shape bench writes it in
_META: dict[str, tuple[Any, str]] = {
    "url": (lambda v: isinstance(v, str), "a URL"),
    "model": (lambda v: isinstance(v, str), "a model name"),
    "label": (lambda v: v is None or isinstance(v, str), "a label"),
    "date": (lambda v: isinstance(v, str), "a date"),
    "sparkfab_version": (lambda v: isinstance(v, str), "a version"),
    "engine": (lambda v: v is None or isinstance(v, dict), "a mapping"),
    "inventory": (lambda v: v is None or isinstance(v, dict), "a mapping"),
    "link": (lambda v: v is None or isinstance(v, dict), "a mapping"),
    "plan": (lambda v: isinstance(v, list) and all(_plan_row(x) for x in v), "a list of tests"),
    "rounds": (_whole, "a whole number"),
    "warmup": (_whole, "a whole number"),
    "seed": (lambda v: v is None or _whole(v), "a whole number"),
}


def check_meta(meta: dict[str, Any], where: Path) -> None:
    """A run.json as bench writes it: each field the report reads of the shape it has."""
    for key, (check, form) in _META.items():
        if key in meta and not check(meta[key]):
            raise UsageError(f"{where}: {key} is {str(meta[key])[:40]!r}, not {form}")


def summarize(rows: list[dict[str, Any]]) -> Summary:
    tests: dict[str, TestSummary] = {}
    for name in dict.fromkeys(r["test"] for r in rows):
        mine = [r for r in rows if r["test"] == name and not r.get("warmup")]
        ok = [r for r in mine if not r.get("error")]
        rounds = sorted({r["round"] for r in ok})
        per_round_last = [max(r["ttft_s"] for r in ok if r["round"] == k) for k in rounds]
        per_round_decode = [
            statistics.fmean([r["decode_tps"] for r in ok if r["round"] == k and r["decode_tps"]])
            for k in rounds
            if any(r["decode_tps"] for r in ok if r["round"] == k)
        ]
        orders = [
            [r["index"] for r in sorted((r for r in ok if r["round"] == k), key=lambda r: r["first_ns"])]
            for k in rounds
        ]
        prefill = prefill_per_token(ok)
        tests[name] = TestSummary(
            requests=max((r["index"] for r in mine), default=-1) + 1,
            prompt_tokens=mine[0]["prompt_tokens_planned"] if mine else 0,
            ttft_s=_stats([r["ttft_s"] for r in ok]),
            last_first_token_s=_stats(per_round_last),
            decode_tps=_stats(per_round_decode),
            first_token_order=orders,
            prefill_bytes_per_token=_stats(prefill),
            decode_bytes_per_token=_stats(decode_per_token(ok)),
            decode_rx_bytes_per_token=_stats(decode_per_token(ok, "round_decode_rx_bytes")),
            prefill_gbps=_stats([r["prefill_gbps"] for r in ok if "prefill_gbps" in r]),
            decode_gbps=_stats([r["decode_gbps"] for r in ok if "decode_gbps" in r]),
            errors=[r["error"] for r in mine if r.get("error")],
            vllm={k: v for k, v in vllmstats.test_result(mine).items() if not isinstance(v, list)},
        )
    return Summary(tests, len(rows), sum(len(t.errors) for t in tests.values()))
