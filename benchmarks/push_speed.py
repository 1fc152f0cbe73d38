"""Benchmark (#29): apply, linkspeed and verify on a lab of booted Sparks with the collective
engine, with Ansible's own linear strategy and with Mitogen's (what the CLI uses), side by side,
each figure also as a multiple of the floor taken in the same run: one `ansible -m ping` of every
host of the lab. Controller CPU seconds (this process's children: sparkfab, ansible-playbook and
its forks) are given per verb and per host. Run as root after scripts/setup.sh:

    .venv/bin/python benchmarks/push_speed.py [--only sw8] [--repeat 2] [--case INVENTORY:CLUSTER:SPARKS]

Each lab is built fresh; the order per strategy is apply (first), apply (nothing to change),
linkspeed 100e, linkspeed 200, verify. sparkfab's Python is compiled first (as a wheel's is).
Results: benchmarks/results/push_speed_2core.txt.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fabric"))

CASES = [("inventory/switch8-crs804-200.yml", "sw8", 8), ("inventory/switch16-crs804-100.yml", "sw16", 16)]
STRATEGIES = {"ansible linear": {"SPARKFAB_MITOGEN": "0"}, "mitogen_linear": {}}


def timed(env: dict[str, str], *args: str) -> tuple[float, float]:
    """(wall s, controller CPU s) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env={**os.environ, **env})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {res.stdout[-1500:]}{res.stderr[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sparkfab(env: dict[str, str], *args: str) -> tuple[float, float]:
    return timed(env, sys.executable, "-m", "sparkfab", *args)


def floor(cluster: str) -> float:
    """One `ansible -m ping` of every host of the lab, as the lab's inventory reaches them."""
    from sparkfab.paths import lab_dir

    inv = lab_dir(cluster) / "inventory.yml"
    env = {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_HOST_KEY_CHECKING": "False"}
    ansible = str(Path(sys.executable).parent / "ansible")
    return timed(env, ansible, "all", "-i", str(inv), "-m", "ansible.builtin.ping", "-f", "32")[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="sw8 or sw16")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (the median is shown)")
    ap.add_argument("--strategy", choices=list(STRATEGIES), help="only this strategy")
    ap.add_argument("--tag", default="", help="a word for this tree in the output (e.g. before, after)")
    ap.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds to wait after lab up (a large lab's machines keep starting services for minutes)",
    )
    ap.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="INVENTORY:CLUSTER:SPARKS",
        help="measure this inventory instead (e.g. a 32-Spark one); repeatable",
    )
    args = ap.parse_args()
    cases = [(c.split(":")[0], c.split(":")[1], int(c.split(":")[2])) for c in args.case] or CASES
    # sparkfab's modules and the playbooks' plugins compiled once, as an installed wheel has them
    # (an editable install, or PYTHONDONTWRITEBYTECODE=1, compiles them again in every verb)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "fabric/sparkfab", "playbooks"],
        cwd=REPO,
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    from sparkfab.lab import build

    for inv, cluster, sparks in cases:
        if args.only and cluster != args.only:
            continue
        for label, env in STRATEGIES.items():
            if args.strategy and label != args.strategy:
                continue
            build.down(cluster)
            sparkfab({}, "lab", "up", inv, "--engine", "collective")
            time.sleep(args.settle)  # the machines settle (journald, Docker's first start)
            floors = [floor(cluster) for _ in range(3)]
            fl = statistics.median(floors)
            # a cluster of real 100G links has no mode to flip to (linkspeed is 200 <-> 100e)
            from sparkfab.resolve import load_plan

            flips = [] if load_plan(str(REPO / inv)).link_speed == "100" else ["100e", "200"]
            figures: dict[str, list[tuple[float, float]]] = {}
            for _ in range(args.repeat):
                if figures:  # a first apply again: reset the hosts to before sparkfab
                    sparkfab(env, "reset", inv, "--lab", "-q")
                figures.setdefault("apply (first)", []).append(sparkfab(env, "apply", inv, "--lab", "-q"))
                figures.setdefault("apply (no change)", []).append(sparkfab(env, "apply", inv, "--lab", "-q"))
                for mode in flips:
                    figures.setdefault(f"linkspeed {mode}", []).append(
                        sparkfab(env, "linkspeed", inv, mode, "--lab", "-q")
                    )
                figures.setdefault("verify", []).append(sparkfab(env, "verify", inv, "--lab", "-q"))
            for name, runs in figures.items():
                wall = statistics.median(w for w, _ in runs)
                cpu = statistics.median(c for _, c in runs)
                print(
                    f"{args.tag:7} {cluster} ({sparks}) {label:15} {name:18} {wall:6.1f} s  "
                    f"{wall / fl:5.1f}x floor ({fl:.1f} s)  "
                    f"controller CPU {cpu:5.1f} s ({cpu / sparks:.2f} s per host)",
                    flush=True,
                )
            build.down(cluster)


if __name__ == "__main__":
    main()
