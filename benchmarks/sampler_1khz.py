"""Benchmark: sample counters at 1 kHz for 60 s on this machine (targets: no gap over 2 ms,
p99 bracket <= 20 us, under 5 % of one core). Reads the loopback device's counters, which
sysfs serves the same way as an RDMA port's.

    .venv/bin/python benchmarks/sampler_1khz.py [SECONDS] [c|python]

The second argument picks the read loop (default: the C one when it was built).
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from sparkfab.measure.counters import sampler, traffic


def _on_cpu_ns() -> int:
    """Time this thread ran, from the scheduler's own accounting (exact, unlike the tick-sampled
    user/kernel split of getrusage, which a task waking at 1 kHz can alias with a 1 kHz tick)."""
    return int(Path("/proc/thread-self/schedstat").read_text().split()[0])


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    impl = sys.argv[2] if len(sys.argv) > 2 else None
    counters = sampler.netdev_counters(["lo"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.smp"
        r0, t0, e0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic(), _on_cpu_ns()
        stats = sampler.sample(counters, out, 0.001, seconds, impl=impl)
        r1, t1, e1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic(), _on_cpu_ns()
        s = traffic.summary(traffic.series(sampler.read(out)))
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    cpu = user + system
    gaps_over_2ms = "yes" if s.gap_ms["max"] > 2.0 else "no"
    policy = "SCHED_FIFO" if stats.realtime else "normal priority"
    span = t1 - t0
    print(
        f"{stats.samples} samples in {span:.1f} s at 1 kHz ({stats.impl} loop, {policy}); "
        f"missed deadlines {stats.missed}; largest gap {s.gap_ms['max']:.2f} ms (over 2 ms: {gaps_over_2ms})"
    )
    br = s.bracket_us
    print(
        f"read bracket p50 {br['p50']:.1f} us, p99 {br['p99']:.1f} us, max {br['max']:.1f} us; CPU "
        f"{100 * (e1 - e0) / 1e9 / span:.1f} % of one core by the scheduler's clock "
        f"(getrusage: {100 * cpu / span:.1f} %, user {100 * user / span:.1f} %, kernel {100 * system / span:.1f} %)"
    )


if __name__ == "__main__":
    main()
