"""A sampled round's traffic split into its requests' prefill and decode windows and the round's
own totals (`measure.bench.windows`), on counters that moved 1,000 bytes every millisecond."""

from __future__ import annotations

from sparkfab.measure.bench import windows
from sparkfab.measure.counters.traffic import Series
from sparkfab.measure.endpoint.stream import RequestResult

MS = 1_000_000
STEADY = Series(
    times_ns=[k * MS for k in range(11)], brackets_ns=[0] * 11, deltas={"tx": [1000] * 10, "rx": [400] * 10}
)


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
    assert windows.round_decode(STEADY, rs) == {
        "round_decode_bytes": 5000, "round_decode_tokens": 3 + 5, "round_decode_rx_bytes": 2000,
    }  # fmt: skip
    recs = windows.records(STEADY, rs, "P-r0.smp")
    assert [(r["index"], r["kind"], r["traffic_file"], r["round_prefill_bytes"]) for r in recs] == [
        (0, "traffic", "P-r0.smp", 5000),
        (1, "traffic", "P-r0.smp", 5000),
    ]


def test_a_request_without_a_first_token_has_no_window():
    failed = RequestResult("P", 0, 0, 100, 8, send_ns=0)
    assert windows.request_windows(STEADY, failed) == {} and windows.round_prefill(STEADY, [failed]) == {}


def test_a_rounds_decode_traffic_is_its_bytes_after_the_last_first_token_over_its_tokens():
    """Two requests of one round: from the later first token (20 ms) to the last token (80 ms)
    only decode runs; the tokens both streamed in that window (4 + 6) share its 60 kB. A round
    whose requests never streamed a token has no such window; summarize takes the ratio per round."""
    from sparkfab.measure.bench.records import decode_per_token
    from sparkfab.measure.counters.traffic import Series
    from sparkfab.measure.endpoint.stream import RequestResult

    ms = 1_000_000
    times = [k * ms for k in range(101)]
    sr = Series(times, times, {"tx": [1000] * 100, "rx": [0] * 100})

    def request(index: int, first: int, last: int) -> RequestResult:
        chunks = [(t * ms, 1) for t in range(first, last + 1, 10)]
        return RequestResult("D", 0, index, 100, 10, 0, first * ms, last * ms, chunks)

    whole = windows.round_decode(sr, [request(0, 10, 60), request(1, 20, 80)])
    assert whole == {"round_decode_bytes": 60_000, "round_decode_tokens": 10, "round_decode_rx_bytes": 0}
    assert windows.round_decode(sr, [request(0, 10, 60), RequestResult("D", 0, 1, 100, 10)]) == {}
    rows = [
        {"round": 0, **whole},
        {"round": 0, **whole},
        {"round": 1, "round_decode_bytes": 9000, "round_decode_tokens": 3},
    ]
    assert decode_per_token(rows) == [6000, 3000]
