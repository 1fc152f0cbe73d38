"""A sampled round's traffic split by what the link carried when: each request's prefill window
(its send to its first token) and decode window (first to last token), and the round's own
totals where its requests overlap (the round's prefill: its first send to its last first token;
its decode: from its last first token on, where only decode runs). Each request of the round
gets one `kind: traffic` record of these in requests.jsonl, beside its own."""

from __future__ import annotations

from typing import Any

from sparkfab.measure.counters import traffic
from sparkfab.measure.endpoint.stream import RequestResult


def records(sr: traffic.Series, results: list[RequestResult], sample_file: str) -> list[dict[str, Any]]:
    """The traffic records of a round's requests, from the round's counter samples `sr` (kept in
    the run's traffic/ folder as `sample_file`)."""
    whole = {**round_prefill(sr, results), **round_decode(sr, results)}
    return [
        {
            "kind": "traffic",
            "test": r.test,
            "round": r.round,
            "index": r.index,
            "traffic_file": sample_file,
            **request_windows(sr, r),
            **whole,
        }
        for r in results
    ]


def request_windows(sr: traffic.Series, r: RequestResult) -> dict[str, Any]:
    """Bytes this host sent during the request's prefill and decode windows."""
    if not (r.first_ns and r.last_ns) or len(sr.times_ns) < 2:
        return {}
    out: dict[str, float] = {}
    for name, a, b in (("prefill", r.send_ns, r.first_ns), ("decode", r.first_ns, r.last_ns)):
        if b > a:
            nbytes = traffic.spread(sr.times_ns, sr.deltas["tx"], a, b - a, 1)[0]
            out[f"{name}_bytes"] = nbytes
            out[f"{name}_gbps"] = nbytes * 8 / ((b - a) / 1e9) / 1e9
    return out


def round_decode(sr: traffic.Series, results: list[RequestResult]) -> dict[str, float]:
    """Bytes this host sent (and received) from the round's last first token to its last token,
    and the tokens its requests streamed in that window: only decode runs there (every prefill of
    the round is done), so their ratio is the round's traffic per output token at its batch."""
    firsts, lasts = [r.first_ns for r in results], [r.last_ns for r in results]
    if not all(firsts) or not all(lasts) or len(sr.times_ns) < 2:
        return {}
    a, b = max(f for f in firsts if f), max(t for t in lasts if t)
    tokens = sum(n for r in results for t, n in r.chunks if a < t <= b)
    if b <= a or tokens < 1:
        return {}
    nbytes = traffic.spread(sr.times_ns, sr.deltas["tx"], a, b - a, 1)[0]
    out: dict[str, float] = {"round_decode_bytes": nbytes, "round_decode_tokens": tokens}
    if "rx" in sr.deltas:  # and what it received: the collectives are symmetric, the head's broadcasts not
        out["round_decode_rx_bytes"] = traffic.spread(sr.times_ns, sr.deltas["rx"], a, b - a, 1)[0]
    return out


def round_prefill(sr: traffic.Series, results: list[RequestResult]) -> dict[str, float]:
    """Bytes this host sent from the round's first request to its last first token: with several
    requests at once their prefill windows overlap, so only the round's total is theirs alone."""
    firsts = [r.first_ns for r in results]
    if not all(firsts) or len(sr.times_ns) < 2:
        return {}
    a, b = min(r.send_ns for r in results), max(f for f in firsts if f)
    if b <= a:
        return {}
    return {"round_prefill_bytes": traffic.spread(sr.times_ns, sr.deltas["tx"], a, b - a, 1)[0]}
