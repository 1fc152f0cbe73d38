"""A sampled round's traffic split into its requests' prefill and decode windows and the round's
own totals (`measure.bench.windows`), on counters that moved 1,000 bytes every millisecond."""

from __future__ import annotations

from sparkfab.measure.bench import windows
from sparkfab.measure.counters.traffic import Series
from sparkfab.measure.endpoint.stream import RequestResult

MS = 1_000_000
STEADY = Series(times_ns=[k * MS for k in range(11)], brackets_ns=[0] * 11, deltas={"tx": [1000] * 10, "rx": [0] * 10})


def _request(index: int, send_ms: int, first_ms: int, last_ms: int) -> RequestResult:
    chunks = [(t * MS, 1) for t in range(first_ms, last_ms + 1)]
    return RequestResult(
        "P", 0, index, 100, 8, send_ns=send_ms * MS, first_ns=first_ms * MS, last_ns=last_ms * MS, chunks=chunks
    )


def test_one_requests_windows_split_its_bytes_at_the_first_token():
    r = _request(0, 0, 4, 10)
    assert windows.request_windows(STEADY, r) == {
        "prefill_bytes": 4000, "prefill_gbps": 4000 * 8 / 4e-3 / 1e9,
        "decode_bytes": 6000, "decode_gbps": 6000 * 8 / 6e-3 / 1e9,
    }  # fmt: skip


def test_overlapping_requests_share_the_rounds_totals():
    rs = [_request(0, 0, 3, 8), _request(1, 1, 5, 10)]
    # the round's prefill: its first send to its last first token; its decode: from there on,
    # with the tokens both requests streamed after it (6..8 of one, 6..10 of the other)
    assert windows.round_prefill(STEADY, rs) == {"round_prefill_bytes": 5000}
    assert windows.round_decode(STEADY, rs) == {"round_decode_bytes": 5000, "round_decode_tokens": 3 + 5}
    recs = windows.records(STEADY, rs, "P-r0.smp")
    assert [(r["index"], r["kind"], r["traffic_file"], r["round_prefill_bytes"]) for r in recs] == [
        (0, "traffic", "P-r0.smp", 5000),
        (1, "traffic", "P-r0.smp", 5000),
    ]


def test_a_request_without_a_first_token_has_no_window():
    failed = RequestResult("P", 0, 0, 100, 8, send_ns=0)
    assert windows.request_windows(STEADY, failed) == {} and windows.round_prefill(STEADY, [failed]) == {}
