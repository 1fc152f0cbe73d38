"""Drive the serving endpoint with a fixed plan and record what each request saw (Part II).

Prompts have the exact planned length (token ids where the server has /tokenize, else text
measured with the server's own counts: `prompts.py`) and differ per test, round and request,
so the prefix cache cannot reuse work. Before each test the link must have been idle; the
sampler runs alongside and each request's traffic is split into its prefill and decode windows.
Results are appended to requests.jsonl (flushed and synced) as each request finishes;
summary.json is computed from that file at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from sparkfab.errors import BenchError
from sparkfab.measure import sampler, traffic
from sparkfab.measure.prompts import PromptMaker, ServerInfo, probe
from sparkfab.measure.stream import RequestResult, stream_completion


@dataclass(frozen=True)
class Test:
    name: str
    requests: int
    prompt_tokens: int
    output_tokens: int = 1024


#: Section 7.4 of the paper.
PLAN = (
    Test("P1", 1, 1024),
    Test("P2", 1, 8192),
    Test("P3", 1, 32768),
    Test("P4", 4, 8192),
    Test("P5", 1, 65536),
    Test("P6", 4, 16384),
)


def load_plan(spec: str | None, output_tokens: int | None = None) -> list[Test]:
    if spec and Path(spec).is_file():
        rows = yaml.safe_load(Path(spec).read_text()) or []
        tests = [
            Test(str(r["name"]), int(r.get("requests", 1)), int(r["prompt_tokens"]), int(r.get("output_tokens", 1024)))
            for r in rows
        ]
    else:
        names = [n.strip() for n in (spec or ",".join(t.name for t in PLAN)).split(",") if n.strip()]
        known = {t.name: t for t in PLAN}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise BenchError(f"unknown test(s) {', '.join(unknown)}: the plan has P1-P6, or pass a YAML file")
        tests = [known[n] for n in names]
    if output_tokens:
        tests = [Test(t.name, t.requests, t.prompt_tokens, output_tokens) for t in tests]
    return tests


@dataclass
class Options:
    url: str
    model: str
    out: Path
    rounds: int = 3
    warmup: int = 1
    seed: int = 0
    counters: list[sampler.Counter] | None = None
    idle_s: float = 10.0
    idle_bps: float = 1e6
    timeout_s: float = 3600.0
    label: str = ""


class Run:
    def __init__(
        self, opt: Options, tests: list[Test], progress: Callable[[RequestResult], None] | None = None
    ) -> None:
        self.opt, self.tests, self.progress = opt, tests, progress
        opt.out.mkdir(parents=True, exist_ok=True)
        self.jsonl = opt.out / "requests.jsonl"

    def write_meta(self, server: ServerInfo) -> None:
        meta = {
            "url": self.opt.url,
            "model": self.opt.model,
            "label": self.opt.label,
            "rounds": self.opt.rounds,
            "warmup": self.opt.warmup,
            "seed": self.opt.seed,
            "plan": [t.__dict__ for t in self.tests],
            "anchor": {"wall_ns": time.time_ns(), "mono_ns": time.monotonic_ns()},
            "counters": [c.__dict__ for c in self.opt.counters or []],
            "server": server.to_json(),
        }
        (self.opt.out / "run.json").write_text(json.dumps(meta, indent=2))

    def record(self, res: RequestResult, extra: dict[str, Any]) -> None:
        with self.jsonl.open("a") as f:
            f.write(json.dumps({**res.to_json(), **extra, "label": self.opt.label}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if self.progress:
            self.progress(res)

    async def run(self, on_server: Callable[[ServerInfo], None] | None = None) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.opt.url, timeout=self.opt.timeout_s) as client:
            server, prompts = await probe(client, self.opt.model, self.opt.seed)
        if on_server:
            on_server(server)
        self.write_meta(server)
        for test in self.tests:
            for rnd in range(-self.opt.warmup, self.opt.rounds):
                await self._one_round(server, prompts, test, rnd)
        summary = summarize(read_requests(self.opt.out))
        (self.opt.out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary

    async def _one_round(self, server: ServerInfo, prompts: PromptMaker, test: Test, rnd: int) -> None:
        opt = self.opt
        smp = None
        stop = threading.Event()
        if opt.counters:
            await asyncio.to_thread(sampler.wait_idle, opt.counters, opt.idle_bps, opt.idle_s)
            (opt.out / "traffic").mkdir(exist_ok=True)
            smp = opt.out / "traffic" / f"{test.name}-r{rnd}.smp"
            thread = threading.Thread(
                target=sampler.sample,
                args=(opt.counters, smp, 0.001),
                kwargs={"stop": stop.is_set, "meta": {"test": test.name, "round": rnd}},
            )
            thread.start()
            await asyncio.sleep(0.05)
        results = [
            RequestResult(test.name, rnd, i, test.prompt_tokens, test.output_tokens, warmup=rnd < 0)
            for i in range(test.requests)
        ]
        bodies = [
            {
                "model": opt.model,
                "prompt": prompts.make(test.prompt_tokens, test.name, rnd, i),
                "max_tokens": test.output_tokens,
                "temperature": 0.0,
                **({"ignore_eos": True} if server.ignore_eos else {}),
            }
            for i in range(test.requests)
        ]

        async def one(i: int) -> None:
            await stream_completion(opt.url, "/v1/completions", bodies[i], results[i], opt.timeout_s)
            self.record(results[i], {})  # as soon as it finishes: a crash later loses nothing

        await asyncio.gather(*(one(i) for i in range(test.requests)))
        if smp is not None:
            await asyncio.sleep(0.05)
            stop.set()
            thread.join()
            sr = traffic.series(sampler.read(smp))
            with self.jsonl.open("a") as f:
                for r in results:
                    f.write(
                        json.dumps(
                            {
                                "kind": "traffic",
                                "test": r.test,
                                "round": r.round,
                                "index": r.index,
                                "traffic_file": smp.name,
                                **_windows(sr, r),
                            }
                        )
                        + "\n"
                    )
                f.flush()
                os.fsync(f.fileno())


def _windows(sr: traffic.Series, r: RequestResult) -> dict[str, Any]:
    """Bytes this host sent during the request's prefill and decode windows."""
    if not (r.first_ns and r.last_ns) or len(sr.times_ns) < 2:
        return {}
    out: dict[str, float] = {}
    for name, a, b in (("prefill", r.send_ns, r.first_ns), ("decode", r.first_ns, r.last_ns)):
        if b > a:
            nbytes = traffic.spread(sr.times_ns, sr.deltas["tx"], a, b - a, 1)[0]
            out[f"{name}_bytes"] = nbytes
            out[f"{name}_gbps"] = nbytes * 8 / ((b - a) / 1e9) / 1e9
    return out


def _stats(xs: list[float]) -> dict[str, float] | None:
    return {"mean": statistics.fmean(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None


def merge(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Request records with their traffic records (written after the round) folded in."""
    extra = {(x["test"], x["round"], x["index"]): x for x in lines if x.get("kind") == "traffic"}
    rows = [x for x in lines if x.get("kind") != "traffic"]
    for r in rows:
        t = extra.get((r["test"], r["round"], r["index"]))
        if t:
            r.update({k: v for k, v in t.items() if k not in ("kind", "test", "round", "index")})
    return rows


def read_requests(run_dir: Path) -> list[dict[str, Any]]:
    return merge([json.loads(x) for x in (run_dir / "requests.jsonl").read_text().splitlines() if x.strip()])


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tests: dict[str, Any] = {}
    for name in dict.fromkeys(r["test"] for r in rows):
        mine = [r for r in rows if r["test"] == name and not r.get("warmup")]
        ok = [r for r in mine if not r.get("error")]
        rounds = sorted({r["round"] for r in ok})
        per_round_last = [max(r["ttft_s"] for r in ok if r["round"] == k) for k in rounds]
        per_round_decode = [
            statistics.fmean([r["decode_tps"] for r in ok if r["round"] == k and r["decode_tps"]])
            for k in rounds
            if any(r["decode_tps"] for r in ok if r["round"] == k)
        ]
        orders = [
            [r["index"] for r in sorted((r for r in ok if r["round"] == k), key=lambda r: r["first_ns"])]
            for k in rounds
        ]
        prefill = [r["prefill_bytes"] / r["prompt_tokens_planned"] for r in ok if "prefill_bytes" in r]
        tests[name] = {
            "requests": max((r["index"] for r in mine), default=-1) + 1,
            "prompt_tokens": mine[0]["prompt_tokens_planned"] if mine else 0,
            "ttft_s": _stats([r["ttft_s"] for r in ok]),
            "last_first_token_s": _stats(per_round_last),
            "decode_tps": _stats(per_round_decode),
            "first_token_order": orders,
            "prefill_bytes_per_token": _stats(prefill),
            "prefill_gbps": _stats([r["prefill_gbps"] for r in ok if "prefill_gbps" in r]),
            "decode_gbps": _stats([r["decode_gbps"] for r in ok if "decode_gbps" in r]),
            "errors": [r["error"] for r in mine if r.get("error")],
        }
    return {"tests": tests, "requests": len(rows), "errors": sum(len(t["errors"]) for t in tests.values())}
