"""Benchmark: resolve and render a 256-Spark switched cluster (target: under 2 s).

.venv/bin/python benchmarks/render_256.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import yaml

from sparkfab.assets import shipped
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan


def inventory(n: int = 256) -> dict:
    hosts = {f"spark-{i:03d}": {"ansible_host": f"10.1.{i // 250}.{i % 250 + 1}"} for i in range(n)}
    cables = [[f"spark-{i:03d}:p1", f"sw1:{i // 2 + 1}/{i % 2 + 1}"] for i in range(n)]
    instances = {
        f"tp8-{k:02d}": {
            "hosts": [f"spark-{i:03d}" for i in range(8 * k, 8 * k + 8)],
            "tp": 8,
            "launcher": "glm-5.3-tp8",
        }
        for k in range(n // 8)
    }
    return {
        "all": {
            "hosts": hosts,
            "vars": {
                "sparkfab": {
                    "cluster": "big256",
                    "rail_prefix": 22,
                    "subnet_pool": "192.168.0.0/16",
                    "switches": {"sw1": {"model": "generic", "ports": n // 2, "speed": 400}},
                    "cables": cables,
                    "instances": instances,
                }
            },
        }
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "big.yml"
        inv.write_text(yaml.safe_dump(inventory()))
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            plan = load_plan(str(inv))
            t1 = time.perf_counter()
            tree = render(plan, shipped())
            t2 = time.perf_counter()
            write_tree(tree, Path(tmp) / "out")
            t3 = time.perf_counter()
            times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
        best = min(times, key=lambda t: t[3])
        files = sum(len(f) for f in tree.hosts.values())
        print(f"256 Sparks, {len(plan.instances)} TP8 instances, {files} host files")
        print(
            f"load+validate+resolve {best[0]:.3f} s | generate {best[1]:.3f} s | write {best[2]:.3f} s | "
            f"total {best[3]:.3f} s (best of 3; target < 2 s)"
        )


if __name__ == "__main__":
    main()
