"""A counter tree in the shape of sysfs, for the sampler."""

from __future__ import annotations

from pathlib import Path

from sparkfab.measure.counters import sampler


def fake_tree(root: Path, devs: list[str], kind: str = "rdma") -> list[sampler.CounterFile]:
    counters = sampler.counter_files(devs, kind, str(root))
    for c in counters:
        Path(c.path).parent.mkdir(parents=True, exist_ok=True)
        Path(c.path).write_text("0\n")
    return counters
