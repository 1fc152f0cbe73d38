"""A torch.distributed all-reduce check and size sweep, one process per Spark.

A single file whose only dependency is torch, so it can be copied into the serving
container on real Sparks (NCCL over RoCE) or run in the namespace lab (gloo on CPU).
Ranks join at tcp://MASTER_ADDR:MASTER_PORT; the interfaces come from the environment
(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), exactly as the engine would use them.

    collective.py run   --rank R --world-size N --master-addr A --master-port P [--backend gloo|nccl]
    collective.py serve ... --http-port 8000   (the check, then rank 0 answers /health and /result)

`run` sweeps the sizes of --sizes (4K,64K,1M,8M,32M unless given). `serve`, the engine's
stand-in, is healthy once its check passed and sweeps only where --sizes asks: nothing reads a
start's sweep, and on the lab's shaped cables the default one kept every start 8 s longer.

Output: one JSON object on stdout (rank 0 prints the sweep; every rank prints its check).
busbw follows nccl-tests: algbw x 2(N-1)/N for all-reduce.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import torch
import torch.distributed as dist

DEFAULT_SIZES = "4K,64K,1M,8M,32M"


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def device_for(backend: str, rank: int) -> torch.device:
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", rank % max(torch.cuda.device_count(), 1)))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def check(rank: int, world: int, dev: torch.device) -> dict[str, Any]:
    """Known sums: every element of rank r's tensor is (r+1)*(i+1); the sum is N(N+1)/2*(i+1)."""
    n = 1 << 16
    base = torch.arange(1, n + 1, dtype=torch.float32, device=dev)
    t = base * (rank + 1)
    dist.all_reduce(t)
    expected = base * (world * (world + 1) / 2)
    wrong = int((t != expected).sum().item())
    dtype_t = torch.full((1024,), float(rank + 1), dtype=torch.bfloat16, device=dev)
    dist.all_reduce(dtype_t)
    bf16_ok = bool((dtype_t.float() == world * (world + 1) / 2).all().item())
    return {"rank": rank, "elements": n, "wrong": wrong, "bf16_ok": bf16_ok, "ok": wrong == 0 and bf16_ok}


def sweep(world: int, dev: torch.device, sizes: list[int], iters: int, warmup: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        t = torch.ones(max(size // 2, 1), dtype=torch.bfloat16, device=dev)
        for _ in range(warmup):
            dist.all_reduce(t)
        sync(dev)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        sync(dev)
        elapsed = (time.perf_counter() - start) / iters
        nbytes = t.numel() * t.element_size()
        algbw = nbytes / elapsed / 1e9
        rows.append(
            {
                "bytes": nbytes,
                "time_us": round(elapsed * 1e6, 2),
                "algbw_GBps": round(algbw, 4),
                "busbw_GBps": round(algbw * 2 * (world - 1) / world, 4),
            }
        )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    dev = device_for(args.backend, args.rank)
    t0 = time.perf_counter()
    dist.init_process_group(
        args.backend,
        init_method=f"tcp://{args.master_addr}:{args.master_port}",
        rank=args.rank,
        world_size=args.world_size,
        timeout=datetime.timedelta(seconds=args.timeout),
    )
    joined = time.perf_counter() - t0
    result = check(args.rank, args.world_size, dev)
    chosen = args.sizes if args.sizes is not None else DEFAULT_SIZES if args.mode == "run" else ""
    sizes = [parse_size(s) for s in chosen.split(",") if s]
    rows = sweep(args.world_size, dev, sizes, args.iters, args.warmup)
    oks = [None] * args.world_size
    dist.all_gather_object(oks, result["ok"])
    dist.barrier()
    return {
        "backend": args.backend,
        "world_size": args.world_size,
        "rank": args.rank,
        "rendezvous_s": round(joined, 3),
        "check": result,
        "all_ranks_ok": all(bool(o) for o in oks),
        "sweep": rows if args.rank == 0 else [],
    }


class _Health(BaseHTTPRequestHandler):
    result: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        ok = self.path in ("/health", "/result") and bool(self.result.get("all_ranks_ok"))
        body = json.dumps(self.result if self.path == "/result" else {"ok": ok}).encode()
        self.send_response(200 if ok else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def serve(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """Stay up like an engine: rank 0 answers /health and /result until SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = None
    if args.rank == 0:
        _Health.result = result
        server = ThreadingHTTPServer((args.http_host, args.http_port), _Health)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    # a wait with a bound: a signal that the kernel hands to one of gloo's threads does not wake
    # a main thread blocked without one, and Python runs handlers only in the main thread (seen
    # at a lab Spark's reboot: SIGTERM sent, the engine still waiting 90 s later)
    while not stop.wait(0.5):
        pass
    if server is not None:
        server.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("run", "serve"))
    p.add_argument("--rank", type=int, default=int(os.environ.get("RANK", 0)))
    p.add_argument("--world-size", type=int, default=int(os.environ.get("WORLD_SIZE", 1)))
    p.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    p.add_argument("--master-port", type=int, default=int(os.environ.get("MASTER_PORT", 29501)))
    p.add_argument("--backend", choices=("gloo", "nccl"), default=os.environ.get("SPARKFAB_BACKEND", "gloo"))
    p.add_argument("--sizes", help=f"comma-separated sizes in bytes (K/M/G); run: {DEFAULT_SIZES}, serve: none")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--http-host", default="0.0.0.0")
    p.add_argument("--http-port", type=int, default=8000)
    args = p.parse_args(argv)
    result = run(args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    if args.mode == "serve":
        serve(args, result)
    dist.destroy_process_group()
    return 0 if result["all_ranks_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
