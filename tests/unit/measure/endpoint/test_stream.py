"""The two figures of a streamed request, from its stamps alone (no clock involved): TTFT from
send to first token, decode speed as (n-1) tokens over first to last token."""

from __future__ import annotations

import pytest

from sparkfab.measure.endpoint.stream import RequestResult


def _result(**kw: object) -> RequestResult:
    return RequestResult("P1", 0, 0, 1024, 101, **kw)  # type: ignore[arg-type]


def test_ttft_and_decode_from_the_stamps():
    r = _result(send_ns=1_000_000_000, first_ns=1_250_000_000, last_ns=2_250_000_000, completion_tokens=101)
    assert r.ttft_s == pytest.approx(0.25)
    assert r.decode_tps == pytest.approx(100.0)  # 100 intervals between 101 tokens in 1 s, not 101


@pytest.mark.parametrize(
    "kw",
    [
        {"first_ns": 1, "last_ns": 1, "completion_tokens": 5},  # every token in one chunk: no interval
        {"first_ns": 1, "last_ns": 9, "completion_tokens": 1},  # one token
        {"first_ns": None, "last_ns": None, "completion_tokens": 0},  # nothing came
    ],
)
def test_no_decode_speed_without_an_interval(kw):
    assert _result(**kw).decode_tps is None
