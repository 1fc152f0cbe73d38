"""sparkfab's measurements in the words of `vllm bench serve` and of vLLM's `/metrics`.

Per test, from the requests of the measured rounds (warm-up excluded), with the meaning
`vllm bench serve` (vLLM 0.32.0, `vllm/benchmarks/serve.py`) gives each key:

  ttft   send -> first chunk with a token                                 (same)
  itl    gaps between consecutive chunks after the first one              (same)
  tpot   (e2el - ttft) / (output tokens - 1), requests with > 1 token     (same)
  e2el   send -> the last chunk with a token                              (vLLM: the last
         chunk with `choices`; the usage-only chunk after it counts in neither)
  duration   first send -> last chunk of the test, over every round: rounds run one after
         another, so request_throughput is requests per second of this test's wall time
  *_throughput   completed requests, output tokens and input + output tokens per duration

Each metric has mean, median, std and the p50/p90/p95/p99 percentiles, in milliseconds, with
numpy's default (linear) percentile interpolation, as vLLM computes them. sparkfab's own
decode speed, (n - 1) / (t_last - t_first), is 1000 / tpot for one request.

Server-side figures come from two scrapes of `/metrics` around the measured rounds: the
difference of each histogram's `_sum` over the difference of its `_count`. What the server says
of itself (its engine and version, where its model was loaded from) is read here too.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

import httpx

from sparkfab import engines
from sparkfab.measure.endpoint import http

PERCENTILES = (50, 90, 95, 99)
METRICS = ("ttft", "tpot", "itl", "e2el")
#: every engine's server-side histograms (seconds) and the names sparkfab records their means
#: under (each engine's own, from the engine seam; their names carry the engine's prefix)
SERVER_HISTOGRAMS = {name: key for e in engines.served() if e.metrics for name, key in e.metrics.histograms.items()}


def percentile(values: list[float], p: float) -> float:
    """numpy.percentile's default (linear interpolation between closest ranks)."""
    xs = sorted(values)
    if not xs:
        return 0.0
    k = (len(xs) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def describe(name: str, seconds: list[float]) -> dict[str, float]:
    ms = [x * 1000 for x in seconds]
    out = {
        f"mean_{name}_ms": statistics.fmean(ms) if ms else 0.0,
        f"median_{name}_ms": statistics.median(ms) if ms else 0.0,
        f"std_{name}_ms": statistics.pstdev(ms) if ms else 0.0,  # numpy.std: population
    }
    out.update({f"p{p}_{name}_ms": percentile(ms, p) for p in PERCENTILES})
    return out


def request_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """ttft, e2el, tpot (s) and the ITL gaps of one successful request row."""
    send, first, last = row["send_ns"], row["first_ns"], row.get("last_ns") or row["first_ns"]
    times = [t for t, _ in row.get("chunks") or [] if t >= first]
    n = row.get("completion_tokens") or 0
    ttft, e2el = (first - send) / 1e9, (last - send) / 1e9
    return {
        "ttft": ttft,
        "e2el": e2el,
        "tpot": (e2el - ttft) / (n - 1) if n > 1 else None,
        "itl": [(b - a) / 1e9 for a, b in itertools.pairwise(times)],
    }


def test_result(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One test's measured rounds as `vllm bench serve --save-result` names them."""
    measured = [r for r in rows if not r.get("warmup")]
    ok = [r for r in measured if not r.get("error") and r.get("first_ns")]
    per = [request_metrics(r) for r in ok]
    starts = [r["send_ns"] for r in measured if r.get("send_ns")]
    ends = [r.get("last_ns") or r.get("first_ns") or r["send_ns"] for r in measured if r.get("send_ns")]
    duration = (max(ends) - min(starts)) / 1e9 if starts else 0.0
    inp = sum(r.get("prompt_tokens") or r.get("prompt_tokens_planned") or 0 for r in ok)
    out = sum(r.get("completion_tokens") or 0 for r in ok)
    result: dict[str, Any] = {
        "duration": duration,
        "completed": len(ok),
        "failed": len(measured) - len(ok),
        "total_input_tokens": inp,
        "total_output_tokens": out,
        "request_throughput": len(ok) / duration if duration else 0.0,
        "output_throughput": out / duration if duration else 0.0,
        "total_token_throughput": (inp + out) / duration if duration else 0.0,
        "input_lens": [r.get("prompt_tokens") or r.get("prompt_tokens_planned") for r in ok],
        "output_lens": [r.get("completion_tokens") for r in ok],
        "ttfts": [p["ttft"] for p in per],
        "itls": [p["itl"] for p in per],
        "latencies": [p["e2el"] for p in per],
        # when each request was sent (s, on this machine's monotonic clock), as vLLM's timeline plot reads them
        "start_times": [r["send_ns"] / 1e9 for r in ok],
        "errors": [r.get("error") or "" for r in measured],
    }
    result.update(describe("ttft", [p["ttft"] for p in per]))
    result.update(describe("tpot", [p["tpot"] for p in per if p["tpot"] is not None]))
    result.update(describe("itl", [g for p in per for g in p["itl"]]))
    result.update(describe("e2el", [p["e2el"] for p in per]))
    return result


def parse_prometheus(text: str) -> dict[str, float]:
    """Sums of every `<histogram>_sum` and `_count` sample over all label sets, read by
    Prometheus's own parser (label values with braces, quotes or escapes included). A body it
    cannot read gives no figures, not an error: the server-side view is optional."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith(("_sum", "_count")) and math.isfinite(sample.value):
                    out[sample.name] = out.get(sample.name, 0.0) + sample.value
    except (ValueError, TypeError, IndexError, KeyError):
        return {}
    return out


def server_side(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Mean of each engine histogram over the requests between two scrapes (ms)."""
    out = {}
    for name, key in SERVER_HISTOGRAMS.items():
        n = after.get(f"{name}_count", 0.0) - before.get(f"{name}_count", 0.0)
        s = after.get(f"{name}_sum", 0.0) - before.get(f"{name}_sum", 0.0)
        if n > 0:
            out[key] = s / n * 1000
            out[key.replace("_mean_", "_count_").removesuffix("_ms")] = n
    return out


#: the sections of `vllm bench serve`'s console block, in its order and words
_SECTIONS = (
    ("ttft", "TTFT", "Time to First Token"),
    ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
    ("itl", "ITL", "Inter-token Latency"),
    ("e2el", "E2EL", "End-to-end Latency"),
)


def console_block(test: str, result: dict[str, Any], server: dict[str, float] | None = None) -> str:
    """One test's result as `vllm bench serve` prints its "Serving Benchmark Result" (its layout:
    50 columns, labels in 40, ms with two decimals, mean/median/P99), with the test's name and,
    where the server's /metrics were read, its mean TTFT and the client's minus it."""
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]

    def row(label: str, value: Any) -> None:
        lines.append(("{:<40} {:<10.2f}" if isinstance(value, float) else "{:<40} {:<10}").format(label, value))

    row("Test:", test)
    row("Successful requests:", result["completed"])
    row("Failed requests:", result["failed"])
    row("Benchmark duration (s):", float(result["duration"]))
    row("Total input tokens:", result["total_input_tokens"])
    row("Total generated tokens:", result["total_output_tokens"])
    row("Request throughput (req/s):", float(result["request_throughput"]))
    row("Output token throughput (tok/s):", float(result["output_throughput"]))
    row("Total token throughput (tok/s):", float(result["total_token_throughput"]))
    for key, name, header in _SECTIONS:
        lines.append("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        row(f"Mean {name} (ms):", float(result[f"mean_{key}_ms"]))
        row(f"Median {name} (ms):", float(result[f"median_{key}_ms"]))
        row(f"P99 {name} (ms):", float(result[f"p99_{key}_ms"]))
        if key == "ttft" and server and "server_mean_ttft_ms" in server:
            row("Mean TTFT at the server (ms):", float(server["server_mean_ttft_ms"]))
            row("Client - server TTFT (ms):", float(result["mean_ttft_ms"] - server["server_mean_ttft_ms"]))
    lines.append("=" * 50)
    return "\n".join(lines) + "\n"


async def engine_info(client: httpx.AsyncClient, model: str = "", total_s: float = 10.0) -> dict[str, Any]:
    """The engine and its version as the server reports them (the first engine of the seam whose
    version path answers: vLLM's GET /version, SGLang's /server_info), and where the served model
    was loaded from (vLLM's /v1/models `root`: a local checkpoint's path)."""
    info: dict[str, Any] = {"name": "unknown", "version": None}
    for spec in engines.served():
        assert spec.metrics is not None
        try:
            r = await http.answer(client, "GET", spec.metrics.version_path, total_s=total_s, max_bytes=1 << 20)
            version = http.decode(r).get("version") if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            version = None
        if isinstance(version, str) and 0 < len(version) <= 64 and version.isprintable():
            info = {"name": spec.name, "version": version}  # anything else is not a version string
            break
    try:
        r = await http.answer(client, "GET", "/v1/models", total_s=total_s, max_bytes=4 << 20)
        rows = http.decode(r).get("data", []) if r.status_code == 200 else []
        root = next((m.get("root") for m in rows if isinstance(m, dict) and m.get("id") == model), None)
    except (httpx.HTTPError, ValueError, AttributeError):
        root = None
    if isinstance(root, str) and root:
        info["model_root"] = root[:4096]
    return info
