"""Benchmark: sample counters at 1 kHz for 60 s on this machine (targets: no gap over 2 ms,
p99 bracket <= 20 us, under 5 % of one core). Reads the loopback device's counters, which
sysfs serves the same way as an RDMA port's.

    .venv/bin/python benchmarks/sampler_1khz.py [SECONDS]
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from sparkfab.measure import sampler, traffic


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    counters = sampler.netdev_counters(["lo"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.smp"
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        stats = sampler.sample(counters, out, 0.001, seconds)
        r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        s = traffic.summary(traffic.series(sampler.read(out)))
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    cpu = user + system
    gaps_over_2ms = "yes" if s["gap_ms"]["max"] > 2.0 else "no"
    policy = "SCHED_FIFO" if stats.realtime else "normal priority"
    span = t1 - t0
    print(
        f"{stats.samples} samples in {span:.1f} s at 1 kHz ({policy}); missed deadlines {stats.missed}; "
        f"largest gap {s['gap_ms']['max']:.2f} ms (over 2 ms: {gaps_over_2ms})"
    )
    br = s["bracket_us"]
    print(
        f"read bracket p50 {br['p50']:.1f} us, p99 {br['p99']:.1f} us, max {br['max']:.1f} us; CPU "
        f"{100 * cpu / span:.1f} % of one core (user {100 * user / span:.1f} %, kernel {100 * system / span:.1f} %)"
    )


if __name__ == "__main__":
    main()
