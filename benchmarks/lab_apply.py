"""Benchmark: lab up/down and apply times for 4 and 8 Sparks (targets: up of 8 < 5 s,
apply of 8 < 60 s on a 2-core machine). Run as root:

    .venv/bin/python benchmarks/lab_apply.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CASES = [("inventory/ring4.yml", "ring4"), ("inventory/switch8-crs804-200.yml", "sw8")]


def timed(*args: str) -> float:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "sparkfab", *args], cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"sparkfab {' '.join(args)} failed: {res.stderr}")
    return time.perf_counter() - t0


def main() -> None:
    from sparkfab.lab import build

    for inv, cluster in CASES:
        build.down(cluster)
        up = timed("lab", "up", inv, "--engine", "collective")
        first = timed("apply", inv, "--lab", "-q")
        second = timed("apply", inv, "--lab", "-q")
        flip = timed("linkspeed", inv, "100e", "--lab", "-q")
        down = timed("lab", "down", inv)
        print(
            f"{cluster}: lab up {up:.2f} s | apply {first:.1f} s | apply again (changed=0) {second:.1f} s | "
            f"linkspeed {flip:.1f} s | lab down {down:.2f} s"
        )


if __name__ == "__main__":
    main()
