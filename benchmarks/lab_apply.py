"""Benchmark: a lab of 4, 8 and 16 booted Sparks: time to come up (every machine booted, sshd
taking logins), memory per Spark once up, apply (first and again, which changes nothing), the
link-speed flip and lab down. Run as root after scripts/setup.sh (the image is built on the
first `lab up`, about a minute, and cached; this benchmark builds it first and says how long):

    .venv/bin/python benchmarks/lab_apply.py [--only ring4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fabric"))

CASES = [
    ("inventory/ring4.yml", "ring4", 4),
    ("inventory/switch8-crs804-200.yml", "sw8", 8),
    ("inventory/switch16-crs804-100.yml", "sw16", 16),
]


def timed(*args: str) -> float:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "sparkfab", *args], cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"sparkfab {' '.join(args)} failed: {res.stderr[-2000:]}")
    return time.perf_counter() - t0


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no MemAvailable in /proc/meminfo")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="one cluster name (ring4, sw8, sw16)")
    args = ap.parse_args()
    from sparkfab.lab import build, image
    from sparkfab.resolve import load_plan

    t0 = time.perf_counter()
    image.machine_root()
    print(f"lab image ready in {time.perf_counter() - t0:.1f} s (0 when cached)")
    for inv, cluster, sparks in CASES:
        if args.only and cluster != args.only:
            continue
        build.down(cluster)
        time.sleep(1)
        before = available_mib()
        up = timed("lab", "up", inv, "--engine", "collective")
        time.sleep(5)  # the machines settle (journald, Docker's first start)
        per_spark = (before - available_mib()) / sparks
        first = timed("apply", inv, "--lab", "-q")
        second = timed("apply", inv, "--lab", "-q")
        direct_100 = load_plan(str(REPO / inv)).link_speed == "100"
        flip = None if direct_100 else timed("linkspeed", inv, "100e", "--lab", "-q")
        down = timed("lab", "down", inv)
        print(
            f"{cluster} ({sparks} Sparks): lab up {up:.1f} s | {per_spark:.0f} MiB per Spark | apply {first:.1f} s | "
            f"apply again (changed=0) {second:.1f} s | linkspeed "
            + ("- (100G links)" if flip is None else f"{flip:.1f} s")
            + f" | lab down {down:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
