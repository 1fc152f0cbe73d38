"""Benchmark: validating an 8-Spark inventory is linear in file size (target: 1 MB of
comments well under a second), and an alias bomb is refused at once.

.venv/bin/python benchmarks/validate_sizes.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from sparkfab.errors import InventoryError
from sparkfab.resolve import load_plan

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "inventory/switch8-crs804-200.yml").read_text()
COMMENT = "# " + "x" * 70 + "\n"  # 73 bytes


def bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "all:\n  vars:\n    x:\n" + "".join(f"      {x}\n" for x in lines) + "    sparkfab: {cluster: x}\n"


def best(path: Path, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        try:
            load_plan(str(path))
        except InventoryError:
            pass
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "inv.yml"
        print("comments   file size   validate (best of 3)   per MB")
        for mb in (0, 1, 2, 4, 7):
            f.write_text(BASE + COMMENT * (mb * 1024 * 1024 // len(COMMENT)))
            t = best(f)
            size = f.stat().st_size / 1e6
            per = f"{t / size:.3f} s" if mb else "-"
            print(f"{mb:>4} MB   {size:>7.2f} MB   {t:>10.4f} s             {per}")
        f.write_text(bomb())
        print(f"alias bomb (9^9 values if expanded): refused in {best(f):.4f} s")


if __name__ == "__main__":
    main()
