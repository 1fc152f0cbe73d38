"""Driving `sparkfab bench` in tests, and what its run directories hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def plan(tmp: Path, rows: list[dict]) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    import yaml

    f = tmp / "plan.yml"
    f.write_text(yaml.safe_dump(rows))
    return str(f)


def bench(cli, url: str, plan_file: str, *args: str, model: str = "fake-model"):
    """`sparkfab bench` against URL with a plan file; further flags as given."""
    return cli("bench", "--url", url, "--model", model, "--plan", plan_file, *args)


def measured_rows(run: Path) -> list[dict]:
    from sparkfab.measure.bench.rundir import RunDir

    return [r for r in RunDir(run).requests() if not r["warmup"]]


#: keys of a `vllm bench serve --save-result` document (vLLM 0.32.0, completions, default
#: percentile metrics ttft,tpot,itl plus e2el) whose meaning sparkfab's result_<test>.json shares
VLLM_KEYS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
    "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
    "total_output_tokens", "request_throughput", "output_throughput", "total_token_throughput", "input_lens",
    "output_lens", "ttfts", "itls", "latencies", "start_times", "errors",
    *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "std", "p99")),
}  # fmt: skip


def run_dir_files(name: str = "run", rows: list[str] | None = None, meta: Any = None) -> dict[str, str]:
    """A bench run directory as `sparkfab bench` leaves it."""
    ok = {
        "test": "P1",
        "round": 0,
        "index": 0,
        "prompt_tokens_planned": 1024,
        "output_tokens_planned": 101,
        "warmup": False,
        "send_ns": 0,
        "first_ns": 100_000_000,
        "last_ns": 1_100_000_000,
        "prompt_tokens": 1024,
        "completion_tokens": 101,
        "chunks": [],
        "error": None,
        "ttft_s": 0.1,
        "decode_tps": 100.0,
        "label": name,
    }
    lines = rows if rows is not None else [json.dumps(ok)]
    meta = meta if meta is not None else {"url": "http://127.0.0.1:1", "model": "m", "label": name, "plan": []}
    return {
        f"{name}/run.json": meta if isinstance(meta, str) else json.dumps(meta),
        f"{name}/requests.jsonl": "".join(x + "\n" for x in lines),
    }
