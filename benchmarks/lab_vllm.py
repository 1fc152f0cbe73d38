"""The paper's method on the lab with the real engine, measured (issue 15).

    benchmarks/lab_vllm.py run [--inventory inventory/ring4.yml] [--rounds 3] [--out DIR]
    benchmarks/lab_vllm.py analyse RUN_200 RUN_100E

`run` (root): lab up with vLLM's CPU build, apply, serve, bench at 200 (the lab's 400 Mbit/s) on
rank 0's Spark with its fabric counters, flip to 100e (200 Mbit/s), bench again, report, tear
down; then `analyse`. `analyse` reads two bench runs (also the demo's) and prints, per test:

- bytes sent per prompt token by rank 0 on its fabric netdevs against the estimate;
- the TTFT increase from 200 to 100e against the estimate's bound (the same bytes at the slower
  rate, nothing overlapped): the paper expects it below the bound and, for prefill-dominated
  tests, above half of it;
- bench's client-side TTFT and inter-token latency against vLLM's own /metrics histograms for
  the same requests (vLLM starts its TTFT clock once the request body is parsed, so the client's
  TTFT is larger by the upload and parse of the prompt);
- decode bytes per output token against the lab engine's Gloo estimate at the test's batch
  (small all-reduces: the fixed cost per ring step weighs).

Numbers are printed and written to analysis.json; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fabric"))


def sh(*args: str) -> str:
    print("+ sparkfab " + " ".join(args), file=sys.stderr, flush=True)
    res = subprocess.run([sys.executable, "-m", "sparkfab", *args], cwd=REPO, text=True, capture_output=True)
    if res.returncode != 0:
        sys.exit(f"sparkfab {' '.join(args)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return res.stdout


def run(inventory: str, rounds: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=False)
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    sh("lab", "up", inventory)
    try:
        sh("apply", inventory, "--lab", "-q")
        sh("serve", "start", inventory, "--lab", "-q")
        marks["serving_s"] = time.monotonic() - t0
        status = json.loads(sh("lab", "status", inventory, "--format", "json"))
        inst = status["serving"][sorted(status["serving"])[0]]
        (out / "estimate.json").write_text(sh("estimate", "--inventory", inventory, "--lab", "--format", "json"))
        for label in ("200", "100e"):
            if label == "100e":
                sh("linkspeed", inventory, "100e", "--lab", "-q")
            t = time.monotonic()
            sh("lab", "exec", inventory, inst["head"], "--", sys.executable, "-m", "sparkfab", "bench",
               "--url", inst["url"], "--model", inst["model"], "--plan", "lab", "--rounds", str(rounds),
               "--idle-seconds", "1", "--inventory", inventory, "--lab", "--counters-host", inst["head"],
               "--source", "netdev", "--label", label, "-o", str(out / f"run-{label}"))  # fmt: skip
            marks[f"bench_{label}_s"] = time.monotonic() - t
        sh("report", str(out / "run-200"), str(out / "run-100e"), "--estimate", "-o", str(out / "report"))
        sh("serve", "stop", inventory, "--lab", "-q")
    finally:
        sh("lab", "down", inventory)
    marks["total_s"] = time.monotonic() - t0
    (out / "timing.json").write_text(json.dumps(marks, indent=2))
    print(json.dumps({k: round(v, 1) for k, v in marks.items()}))
    analyse(out / "run-200", out / "run-100e", out / "analysis.json")


def _load(d: Path) -> dict[str, Any]:
    return {
        "meta": json.loads((d / "run.json").read_text()),
        "summary": json.loads((d / "summary.json").read_text()),
        "server": json.loads((d / "server.json").read_text()) if (d / "server.json").exists() else {},
        "rows": [json.loads(x) for x in (d / "requests.jsonl").read_text().splitlines() if x.strip()],
    }


def _prefill(run: dict[str, Any], test: str) -> float:
    return float(run["summary"]["tests"][test]["prefill_bytes_per_token"]["mean"])


def _decode_bytes_per_token(run: dict[str, Any], test: str) -> float | None:
    """The summary's decode traffic per output token (per round: from its last first token on)."""
    stats = run["summary"]["tests"][test].get("decode_bytes_per_token")
    return float(stats["mean"]) if stats else None


def analyse(a_dir: Path, b_dir: Path, out: Path | None = None) -> dict[str, Any]:
    from dataclasses import replace

    from sparkfab.measure.bench.runs import link_gbps, load_run, served_config, served_tp
    from sparkfab.measure.estimate import Setup, bytes_per_token, extra_time
    from sparkfab.measure.estimate.gloo import gloo_view
    from sparkfab.measure.estimate.model import from_config

    a, b = _load(a_dir), _load(b_dir)
    ra = load_run(a_dir)
    config, tp = served_config(ra), served_tp(ra)
    if config is None or tp is None:
        sys.exit(f"{a_dir}: not a lab run with a local model and an inventory (bench --inventory --lab)")
    setup = Setup(from_config(str(config)), tp)
    bpt = bytes_per_token(setup)
    ga, gb = link_gbps(ra, 0.4), link_gbps(load_run(b_dir), 0.2)
    rows = []
    for name, ta in a["summary"]["tests"].items():
        tb = b["summary"]["tests"].get(name)
        if tb is None:
            continue
        key = "last_first_token_s" if ta["requests"] > 1 else "ttft_s"
        inc = tb[key]["mean"] - ta[key]["mean"]
        bound = extra_time(ta["prompt_tokens"] * ta["requests"] * bpt, ga, gb)
        row: dict[str, Any] = {
            "test": name,
            "requests": ta["requests"],
            "prompt_tokens": ta["prompt_tokens"],
            "ttft_200_s": ta[key]["mean"],
            "ttft_100e_s": tb[key]["mean"],
            "increase_s": inc,
            "bound_s": bound,
            "increase_over_bound": inc / bound,
            "bytes_per_token": {lab: _prefill(r, name) for lab, r in (("200", a), ("100e", b))},
            "decode_bytes_per_token": {lab: _decode_bytes_per_token(r, name) for lab, r in (("200", a), ("100e", b))},
            "decode_estimate": gloo_view(replace(setup, batch=ta["requests"])).decode_bytes_per_token,
        }
        for lab, r in (("200", a), ("100e", b)):
            client, server = r["summary"]["tests"][name]["vllm"], r["server"].get(name, {})
            if server.get("server_count_ttft"):
                row[f"client_vs_server_{lab}"] = {
                    "ttft_ms": client["mean_ttft_ms"] - server["server_mean_ttft_ms"],
                    "itl": client["mean_itl_ms"] / server["server_mean_itl_ms"] - 1,
                }
        rows.append(row)
    result = {
        "estimate_bytes_per_token": bpt,
        "gloo": dataclasses.asdict(gloo_view(setup)),
        "tp": tp,
        "gbps": [ga, gb],
        "config": str(config),
        "tests": rows,
    }
    _print(result)
    if out is not None:
        out.write_text(json.dumps(result, indent=2))
    return result


def _print(r: dict[str, Any]) -> None:
    est = r["estimate_bytes_per_token"]
    print(f"\nTP{r['tp']}, {r['gbps'][0]:g} -> {r['gbps'][1]:g} Gb/s, estimate {est:,.0f} B per prompt token per rank")
    head = "test  prompt    B/token 200 (vs est)   B/token 100e      TTFT 200  TTFT 100e  increase  bound   inc/bound"
    print(head)
    for t in r["tests"]:
        b2, b1 = t["bytes_per_token"]["200"], t["bytes_per_token"]["100e"]
        print(
            f"{t['test']:<5} {t['requests']}x{t['prompt_tokens']:<6} {b2:>9,.0f} ({b2 / est - 1:+.2%})  "
            f"{b1:>9,.0f} ({b1 / est - 1:+.2%})  {t['ttft_200_s']:>7.3f} s {t['ttft_100e_s']:>7.3f} s "
            f"{t['increase_s']:>+7.3f} s {t['bound_s']:>6.3f} s {t['increase_over_bound']:>6.0%}"
        )
    print(
        "\nclient (bench) vs server (/metrics), same requests: TTFT difference, ITL ratio - 1; "
        "decode bytes per output token against the Gloo estimate at the test's batch"
    )
    for t in r["tests"]:
        parts = []
        for lab in ("200", "100e"):
            c = t.get(f"client_vs_server_{lab}")
            if c:
                parts.append(f"{lab}: TTFT {c['ttft_ms']:+.1f} ms, ITL {c['itl']:+.2%}")
        dec, model = t["decode_bytes_per_token"]["200"], t["decode_estimate"]
        parts.append(
            f"decode {dec:,.0f} B/token (Gloo model {model:,.0f}: {dec / model - 1:+.1%})" if dec else "decode -"
        )
        print(f"{t['test']:<5} " + "; ".join(parts))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--inventory", default="inventory/ring4.yml")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--out", type=Path, default=Path("/tmp/sparkfab-lab-vllm"))
    an = sub.add_parser("analyse")
    an.add_argument("runs", nargs=2, type=Path)
    args = p.parse_args()
    if args.cmd == "run":
        run(args.inventory, args.rounds, args.out)
    else:
        analyse(*args.runs)


if __name__ == "__main__":
    main()
