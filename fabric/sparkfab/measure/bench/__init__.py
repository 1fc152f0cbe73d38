"""Drive the serving endpoint with a fixed plan and record what each request saw (Part II).

Prompts have the exact planned length (token ids where the server has /tokenize, else text
measured with the server's own counts: `prompts.py`) and differ per test, round and request,
so the prefix cache cannot reuse work. Before each test the link must have been idle; the
sampler runs alongside and each request's traffic is split into its prefill and decode windows.
Results are appended to requests.jsonl (flushed and synced) as each request finishes;
summary.json is computed from that file at the end. What the run directory holds, and how each
of its files is read and written: `rundir`.
"""

from __future__ import annotations

import asyncio
import errno
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import httpx

from sparkfab import __version__
from sparkfab.errors import BenchError, ServerError, Unavailable, UsageError
from sparkfab.measure.bench import served, vllmstats, windows
from sparkfab.measure.bench.records import Summary, summarize
from sparkfab.measure.bench.rundir import RunDir
from sparkfab.measure.counters import sampler, traffic
from sparkfab.measure.endpoint import http
from sparkfab.measure.endpoint.access import Access
from sparkfab.measure.endpoint.prompts import PromptMaker, ServerInfo, probe
from sparkfab.measure.endpoint.stream import RequestResult, stream_completion
from sparkfab.measure.plans import Test, warmed

#: how long a server's metadata and metrics endpoints (/version, /v1/models, /metrics) have to
#: answer whole: they answer in milliseconds, and a bench must not wait on them
METADATA_S = 10.0


@dataclass(kw_only=True)
class Options:
    """What one bench run is asked to do: the server and model, the run directory, the rounds, the
    counters to sample and the idle link to wait for, the bounds on the server's answers, and
    what the report reads beside the measurements (the label, the inventory's context)."""

    url: str
    model: str
    out: Path
    rounds: int = 3
    warmup: int = 1
    seed: int = 0
    counters: list[sampler.CounterFile] | None = None
    idle_s: float = 10.0
    idle_bps: float = 1e6
    timeout_s: float = 3600.0
    label: str = ""
    silence_s: float = 300.0  # longest silence of the server within a request (first byte, between chunks)
    connect_s: float = 10.0
    resume: bool = False
    access: Access = field(default_factory=Access)
    context: dict[str, Any] = field(default_factory=dict)  # inventory, cluster, link speed (for reports)
    #: reads a file on the serving host (the served checkpoint's config.json, at the path vLLM
    #: reports, which is the host's as well: the image mounts the cache at the same path)
    remote_read: Callable[[str], str | None] | None = None
    metadata: dict[str, str] = field(default_factory=dict)  # --metadata KEY=VALUE


OnRequest: TypeAlias = Callable[[RequestResult], None] | None  # hears of every request that ended
OnPhase: TypeAlias = Callable[[str], None] | None  # hears what the run does now (test, round, step)


class Run:
    def __init__(self, opt: Options, tests: list[Test], progress: OnRequest = None, phase: OnPhase = None) -> None:
        self.opt, self.tests, self.progress = opt, tests, progress
        self.phase: Callable[[str], None] = phase or (lambda text: None)
        self.dir = RunDir(opt.out)
        self.done: set[tuple[str, int]] = set()  # (test, round) finished in the run being resumed
        #: in every prompt's seed: another run (the other link speed, a rerun) gets other prompts of
        #: the same lengths, so an engine that kept its prefix cache cannot answer from it
        self.salt = self._earlier_salt() if opt.resume else secrets.token_hex(4)
        self.no_metrics = False  # /metrics did not answer in time once: not asked again

    def _earlier_salt(self) -> str:
        try:
            meta = self.dir.meta()
        except (UsageError, Unavailable):
            return ""
        salt = meta.get("prompt_salt")
        return salt if isinstance(salt, str) and len(salt) <= 64 else ""

    def write_meta(self, server: ServerInfo, engine: dict[str, Any]) -> None:
        meta = {
            "url": self.opt.url,
            "model": self.opt.model,
            "label": self.opt.label,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "sparkfab_version": __version__,
            "engine": engine,
            **self.opt.context,
            "rounds": self.opt.rounds,
            "warmup": self.opt.warmup,
            "warmup_of": [t.name for t in warmed(self.tests)],
            "seed": self.opt.seed,
            "prompt_salt": self.salt,
            "plan": [t.__dict__ for t in self.tests],
            "anchor": {"wall_ns": time.time_ns(), "mono_ns": time.monotonic_ns()},
            "counters": [c.__dict__ for c in self.opt.counters or []],
            "server": server.to_json(),
            "metadata": self.opt.metadata,
        }
        self.dir.write_meta(meta)
        served.keep_config(self.dir, engine.get("model_root"), self.opt.model, self.opt.remote_read)

    def record(self, res: RequestResult, extra: dict[str, Any]) -> None:
        self.dir.append({**res.to_json(), **extra, "label": self.opt.label})
        if self.progress:
            self.progress(res)

    async def run(self, on_server: Callable[[ServerInfo], None] | None = None) -> Summary:
        opt = self.opt
        timeout = httpx.Timeout(min(opt.silence_s, opt.timeout_s), connect=min(opt.connect_s, opt.timeout_s))
        async with self.client(timeout) as client:
            try:
                server, prompts = await asyncio.wait_for(
                    probe(client, opt.model, f"{opt.seed}:{self.salt}"), opt.timeout_s * 4
                )
            except TimeoutError:
                raise ServerError(f"{opt.url} did not finish the probe within {opt.timeout_s * 4:g} s") from None
            engine = await vllmstats.engine_info(client, self.opt.model, METADATA_S)
        if on_server:
            on_server(server)
        try:
            opt.out.mkdir(exist_ok=True)
        except OSError as exc:
            raise Unavailable(f"-o {opt.out}: {exc.strerror or exc}") from None
        try:
            with self.dir.held():
                return await self._measure(server, prompts, engine)
        except OSError as exc:
            if exc.errno in _DISK_ERRORS:  # a write into the run (its lock first) ran out
                which = f" ({exc.filename})" if exc.filename else ""
                raise Unavailable(f"-o {opt.out}: writing the run{which}: {exc.strerror}") from None
            raise

    async def _measure(self, server: ServerInfo, prompts: PromptMaker, engine: dict[str, Any]) -> Summary:
        """The run proper, with the run directory held: one bench writes it at a time."""
        opt = self.opt
        if opt.resume:
            self.done = self.resume_state()
        else:
            if others := self.dir.written():  # another bench made it between our check and our lock
                raise UsageError(f"-o {opt.out}: another bench wrote {others[0]} into it first; choose a new directory")
            self.write_meta(server, engine)
        warm = {t.name for t in warmed(self.tests)}  # before a test larger than any before it
        for test in self.tests:
            before = None
            for rnd in range(-opt.warmup if test.name in warm else 0, opt.rounds):
                if rnd == 0:
                    self.phase(f"{test.name}: reading /metrics before the measured rounds")
                    before = await self.scrape()
                if (test.name, rnd) not in self.done:
                    await self._one_round(server, prompts, test, rnd)
            self.phase(f"{test.name}: reading /metrics after the measured rounds")
            self.save_server_side(test.name, before, await self.scrape())
        rows = self.dir.requests()
        summary = summarize(rows)
        self.save_results(rows, engine)
        self.dir.write_summary(summary.to_dict())
        return summary

    def client(self, timeout: httpx.Timeout) -> httpx.AsyncClient:
        a = self.opt.access
        verify: Any = a.ssl_context() if self.opt.url.startswith("https") else True
        # the server directly, as the timed client reaches it: a proxy from the environment would add
        # its own time to every figure (and a dead one would fail the probe only)
        return httpx.AsyncClient(
            base_url=self.opt.url, timeout=timeout, headers=a.headers(), verify=verify, trust_env=False
        )

    async def scrape(self) -> dict[str, float] | None:
        """vLLM's histogram sums and counts now, or None when the server has no /metrics. A
        /metrics that does not answer whole within METADATA_S once is not asked again."""
        if self.no_metrics:
            return None
        try:
            async with self.client(httpx.Timeout(METADATA_S)) as c:
                r = await http.answer(c, "GET", "/metrics")
        except httpx.TimeoutException:
            self.no_metrics = True
            return None
        except httpx.HTTPError:
            return None
        return vllmstats.parse_prometheus(r.text) if r.status_code == 200 else None

    def save_server_side(self, test: str, before: dict[str, float] | None, after: dict[str, float] | None) -> None:
        figures = vllmstats.server_side(before, after) if before is not None and after is not None else {}
        self.dir.write_server(test, figures)

    def save_results(self, rows: list[dict[str, Any]], engine: dict[str, Any]) -> None:
        """result_<test>.json: one `vllm bench serve --save-result` document per test."""
        server = self.dir.server()
        for t in self.tests:
            mine = [r for r in rows if r["test"] == t.name]
            doc = {
                # as vllm bench serve's --metadata, each pair a key of the document (here a key
                # the document has keeps its measured value)
                **self.opt.metadata,
                "date": time.strftime("%Y%m%d-%H%M%S"),
                "endpoint_type": "openai",
                "backend": "openai",
                "label": self.opt.label,
                "model_id": self.opt.model,
                "tokenizer_id": self.opt.model,
                "num_prompts": t.requests * self.opt.rounds,
                "request_rate": "inf",
                "burstiness": 1.0,
                "max_concurrency": t.requests,
                **vllmstats.test_result(mine),
                **server.get(t.name, {}),
                "engine": engine,
                "sparkfab_test": t.__dict__,
            }
            self.dir.write_result(t.name, doc)

    def resume_state(self) -> set[tuple[str, int]]:
        """Rounds the earlier run finished; requests.jsonl keeps only them (a round cut short
        runs again whole, so no round mixes two sittings)."""
        try:
            meta = self.dir.meta()
        except (UsageError, Unavailable) as exc:
            raise BenchError(f"{self.opt.out}: no readable run.json to resume ({exc})") from None
        self.dir.server()
        want = {
            "url": self.opt.url,
            "model": self.opt.model,
            "seed": self.opt.seed,
            "plan": [t.__dict__ for t in self.tests],
        }
        differ = [k for k, v in want.items() if meta.get(k) != v]
        if differ:
            raise BenchError(f"--resume: the run in {self.opt.out} has another {', '.join(differ)}; start a new run")
        lines, _ = self.dir.lines()
        rows = [x for x in lines if x.get("kind") != "traffic"]
        size = {t.name: t.requests for t in self.tests}
        done = {
            (r["test"], r["round"])
            for r in rows
            if len({x["index"] for x in rows if (x["test"], x["round"]) == (r["test"], r["round"])})
            >= size.get(r["test"], 1)
        }
        self.dir.keep_only([x for x in lines if (x["test"], x["round"]) in done])
        return done

    async def _one_round(self, server: ServerInfo, prompts: PromptMaker, test: Test, rnd: int) -> None:
        opt = self.opt
        smp = None
        stop = threading.Event()
        which = f"warm-up {rnd + opt.warmup + 1}/{opt.warmup}" if rnd < 0 else f"round {rnd + 1}/{opt.rounds}"
        if opt.counters:
            self.phase(
                f"{test.name} {which}: waiting for an idle link (below {opt.idle_bps:g} B/s for {opt.idle_s:g} s)"
            )
            await asyncio.to_thread(sampler.wait_idle, opt.counters, opt.idle_bps, opt.idle_s)
            smp = self.dir.samples(test.name, rnd)
            thread = threading.Thread(
                target=sampler.sample,
                args=(opt.counters, smp, 0.001),
                kwargs={"stop": stop.is_set, "meta": {"test": test.name, "round": rnd}},
            )
            thread.start()
            await asyncio.sleep(0.05)
        self.phase(f"{test.name} {which}: {test.requests} request(s) of {test.prompt_tokens} prompt tokens")
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
            await stream_completion(
                opt.url,
                "/v1/completions",
                bodies[i],
                results[i],
                opt.timeout_s,
                opt.silence_s,
                opt.connect_s,
                opt.access,
            )
            self.record(results[i], {})  # as soon as it finishes: a crash later loses nothing

        await asyncio.gather(*(one(i) for i in range(test.requests)))
        if smp is not None:
            await asyncio.sleep(0.05)
            stop.set()
            thread.join()
            self.dir.append(*windows.records(traffic.series(sampler.read(smp)), results, smp.name))


#: the errors of a write that the disk, not the server, gives (full, over quota, read-only, failing)
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}
