"""A run's requests.jsonl: reading it back (a killed bench leaves a torn last line), folding
each request's traffic record into it, and the per-test summary (summary.json, the report)."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sparkfab.measure import vllmstats


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
    prefill_gbps: Stats | None
    decode_gbps: Stats | None
    errors: list[str]
    vllm: dict[str, Any]  # the same requests in vllm bench serve's terms (ms; lists left to result_<test>.json)

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


def read_requests(run_dir: Path) -> list[dict[str, Any]]:
    return merge(read_lines(run_dir / "requests.jsonl")[0])


def read_lines(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The records of a requests.jsonl and how many lines were skipped: torn (a killed bench
    leaves half a line), not JSON, or not a record of the shape bench writes."""
    if not path.exists():
        return [], 0
    out, skipped = [], 0
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if _well_formed(rec):
            out.append(rec)
        else:
            skipped += 1
    return out, skipped


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _well_formed(rec: Any) -> bool:
    if not isinstance(rec, dict) or not isinstance(rec.get("test"), str):
        return False
    if not (isinstance(rec.get("round"), int) and isinstance(rec.get("index"), int)):
        return False
    if rec.get("kind") == "traffic":
        return all(_num(v) for k, v in rec.items() if k.endswith(("_bytes", "_gbps")))
    if not isinstance(rec.get("prompt_tokens_planned"), int) or not isinstance(rec.get("error"), str | None):
        return False
    if rec.get("error"):
        return True
    return (
        _num(rec.get("ttft_s"))
        and isinstance(rec.get("first_ns"), int)
        and (rec.get("decode_tps") is None or _num(rec.get("decode_tps")))
    )


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
            prefill_gbps=_stats([r["prefill_gbps"] for r in ok if "prefill_gbps" in r]),
            decode_gbps=_stats([r["decode_gbps"] for r in ok if "decode_gbps" in r]),
            errors=[r["error"] for r in mine if r.get("error")],
            vllm={k: v for k, v in vllmstats.test_result(mine).items() if not isinstance(v, list)},
        )
    return Summary(tests, len(rows), sum(len(t.errors) for t in tests.values()))
