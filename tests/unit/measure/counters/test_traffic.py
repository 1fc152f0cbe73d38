"""Counters read back as traffic (`measure.counters.traffic`): a counter's step across a reset or a
wrap, and an interval's bytes spread over the bins it overlaps, none lost or made up."""

from __future__ import annotations

from sparkfab.measure.counters import traffic

MS = 1_000_000


def test_an_intervals_bytes_are_spread_by_overlap_and_sum_to_what_moved():
    times, deltas = [0, 10 * MS, 20 * MS], [1000, 3000]
    bins = traffic.spread(times, deltas, 5 * MS, 5 * MS, 3)  # [5, 10), [10, 15), [15, 20)
    # half of the first interval's bytes fall in the first bin (whole bytes: one of rounding)
    assert abs(bins[0] - 500) <= 1 and bins[1:] == [1500, 1500]
    whole = traffic.spread(times, deltas, 0, 20 * MS, 1)
    assert whole == [4000]


def test_a_counter_step_across_a_wrap_or_a_reset_is_named():
    assert traffic.counter_delta(100, 350) == (250, "ok")
    assert traffic.counter_delta(2**64 - 10, 20) == (30, "wrap")  # a 64-bit counter overflowed
    assert traffic.counter_delta(5_000_000, 20) == (20, "reset")  # the driver started again at 0
