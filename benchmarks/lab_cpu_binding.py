"""Where the lab's vLLM ranks run, and what one prefill costs there (issue 47, item 3).

    benchmarks/lab_cpu_binding.py [--inventory inventory/ring4.yml] [--prompt 2048] [--repeat 3]
                                  [--env KEY=VALUE ...]

Root, after scripts/setup.sh. Brings the lab up with vLLM's CPU build, applies, serves, then
sends one warm-up request and `--repeat` timed requests of `--prompt` prompt tokens and one
output token to rank 0 (from this machine to rank 0's management address, inside the lab), and
reads the CPUs every thread of every engine process may run on (`Cpus_allowed_list` of each
task under /proc: what `taskset -pc` shows, thread by thread). `--env` adds variables to the
lab recipe's engine environment for the run (the recipe file is restored afterwards), so a
binding can be compared with the recipe's own. Prints one line per figure; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "launchers" / "lab-vllm.yml"


def sparkfab(*args: str) -> str:
    print("+ sparkfab " + " ".join(args), file=sys.stderr, flush=True)
    res = subprocess.run([sys.executable, "-m", "sparkfab", *args], cwd=REPO, text=True, capture_output=True)
    if res.returncode != 0:
        sys.exit(f"sparkfab {' '.join(args)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return res.stdout


def engine_threads() -> dict[str, set[str]]:
    """Every vLLM process of this machine (the lab's: nothing else runs one) -> the CPU lists
    its threads may run on."""
    out: dict[str, set[str]] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            comm = (proc / "comm").read_text().strip()
        except OSError:
            continue
        if "vllm" not in cmd and not comm.startswith("VLLM"):
            continue
        lists = set()
        for task in proc.glob("task/*"):
            try:
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("Cpus_allowed_list:"):
                        lists.add(line.split(":", 1)[1].strip())
            except OSError:
                pass
        out[f"{proc.name} {comm}"] = lists
    return out


def request(url: str, model: str, tokens: int) -> float:
    body = json.dumps(
        {"model": model, "prompt": [(7 * i) % 300 + 5 for i in range(tokens)], "max_tokens": 1, "ignore_eos": True}
    ).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=900) as r:
        r.read()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inventory", default="inventory/ring4.yml")
    ap.add_argument("--prompt", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    original = RECIPE.read_text()
    if a.env:
        extra = "".join(f'  {k}: "{v}"\n' for k, v in (e.split("=", 1) for e in a.env))
        RECIPE.write_text(original.replace("env:\n", "env:\n" + extra, 1))
    t0 = time.monotonic()
    sparkfab("lab", "up", a.inventory)
    try:
        sparkfab("apply", a.inventory, "--lab", "-q")
        t = time.monotonic()
        sparkfab("serve", "start", a.inventory, "--lab", "-q")
        print(f"serve start: {time.monotonic() - t:.1f} s (lab up and apply before it: {t - t0:.1f} s)")
        status = json.loads(sparkfab("lab", "status", a.inventory, "--format", "json"))
        inst = status["serving"][sorted(status["serving"])[0]]
        t = time.perf_counter()
        request(inst["url"], inst["model"], 16)
        print(f"first request after serve start: {time.perf_counter() - t:.1f} s")
        request(inst["url"], inst["model"], a.prompt)  # the warm-up of this prompt length
        times = [request(inst["url"], inst["model"], a.prompt) for _ in range(a.repeat)]
        print(
            f"{a.prompt}-token prompt, 1 output token: "
            + ", ".join(f"{x:.2f}" for x in times)
            + f" s (median {statistics.median(times):.2f} s)"
        )
        for name, lists in sorted(engine_threads().items()):
            print(f"  {name}: threads may run on CPUs {' | '.join(sorted(lists))}")
    finally:
        RECIPE.write_text(original)
        subprocess.run([sys.executable, "-m", "sparkfab", "lab", "down", a.inventory], cwd=REPO, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
