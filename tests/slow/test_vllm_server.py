"""Against the real vLLM (CPU build in .venv-vllm) serving a tiny local model:
sparkfab's result JSON carries the keys of `vllm bench serve`'s for the same plan, and both
clients' decode figures agree with each other and with the server's own inter-token latency."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from sparkfab.lab.model import make
from sparkfab.measure.bench.vllmstats import parse_prometheus, server_side
from tests.conftest import REPO
from tests.helpers.bench import VLLM_KEYS
from tests.helpers.server import free_port, serving

pytestmark = pytest.mark.slow
VLLM_PY = Path(os.environ.get("SPARKFAB_VLLM_PYTHON") or REPO / ".venv-vllm/bin/python")
PROMPT, OUTPUT, ROUNDS = 256, 512, 4


SERVER_CPU = 0


def _client_cpus() -> set[int]:
    return (os.sched_getaffinity(0) - {SERVER_CPU}) or {SERVER_CPU}


def _pin(cpus: set[int]) -> None:
    os.sched_setaffinity(0, cpus)


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(root / "hf"),
        "VLLM_NO_USAGE_STATS": "1",
        # its ZMQ sockets and other temporary files with the test's, not left in /tmp when it is killed
        "VLLM_RPC_BASE_PATH": str(root),
        "TMPDIR": str(root),
    }


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    if not VLLM_PY.exists():
        pytest.skip("no vLLM environment (.venv-vllm, made by scripts/setup.sh)")
    root = tmp_path_factory.mktemp("vllm")
    model = make(root / "tiny", hidden=128, heads=2, kv_heads=1)
    port = free_port()
    cmd = [str(VLLM_PY), "-m", "vllm.entrypoints.cli.main", "serve", str(model), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--max-model-len", "4096", "--enforce-eager"]
    # the server on the first CPU, the clients on the others: on a small machine a benchmark
    # client that shares the server's cores slows the very decode it measures
    env = {**_env(root), "VLLM_CPU_OMP_THREADS_BIND": str(SERVER_CPU)}
    url = f"http://127.0.0.1:{port}"
    with serving(cmd, env, root / "serve.log", url, 420, "vLLM", cwd=root, preexec_fn=lambda: _pin({SERVER_CPU})):
        yield url, str(model), root


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return parse_prometheus(r.read().decode())


def test_same_keys_and_decode_as_vllm_bench_serve(vllm_server, cli, tmp_path):
    url, model, root = vllm_server
    # sparkfab bench first (its warm-up round also warms the server up), then vllm bench serve
    plan = tmp_path / "plan.yml"
    plan.write_text(f"- {{name: same, requests: 1, prompt_tokens: {PROMPT}, output_tokens: {OUTPUT}}}\n")
    mine = os.sched_getaffinity(0)
    _pin(_client_cpus())
    try:
        res = cli(
            "bench", "--url", url, "--model", model, "--plan", str(plan), "--rounds", str(ROUNDS), "--warmup", "1",
            "--idle-seconds", "0", "-o", str(tmp_path / "run"),
        )  # fmt: skip
    finally:
        _pin(mine)
    assert res.code == 0, res.err
    # vllm bench serve: random prompts of PROMPT tokens, OUTPUT tokens, one at a time
    before = _scrape(url)
    cmd = [str(VLLM_PY), "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "vllm"]
    cmd += ["--base-url", url, "--model", model, "--dataset-name", "random", "--random-input-len", str(PROMPT)]
    cmd += ["--random-output-len", str(OUTPUT), "--num-prompts", str(ROUNDS), "--max-concurrency", "1"]
    # the file's stem names its test in `sparkfab report`: the same name as ours, to compare them
    cmd += ["--ignore-eos", "--save-result", "--save-detailed", "--result-dir", str(tmp_path / "theirs")]
    cmd += ["--result-filename", "same.json", "--label", "theirs"]
    cmd += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm"]
    clients = _client_cpus()
    run = subprocess.run(
        cmd, env=_env(root), capture_output=True, text=True, timeout=600, cwd=root, preexec_fn=lambda: _pin(clients)
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    theirs = json.loads((tmp_path / "theirs/same.json").read_text())
    theirs_server = server_side(before, _scrape(url))
    ours = json.loads((tmp_path / "run/result_same.json").read_text())
    shared = VLLM_KEYS & set(theirs)
    assert len(shared) > 30 and shared <= set(ours), sorted(shared - set(ours))
    assert ours["completed"] == theirs["completed"] == ROUNDS
    assert ours["total_output_tokens"] == theirs["total_output_tokens"] == ROUNDS * OUTPUT
    # decode: each client against the server's own inter-token latency over its own requests
    assert ours["mean_tpot_ms"] == pytest.approx(ours["server_mean_itl_ms"], rel=0.02)
    assert theirs["mean_tpot_ms"] == pytest.approx(theirs_server["server_mean_itl_ms"], rel=0.02)
    assert ours["mean_itl_ms"] == pytest.approx(ours["server_mean_itl_ms"], rel=0.02)
    # the server's own speed drifts a few percent between two runs on this machine; measured
    # against it, the two clients' decode figures agree within 2 %
    ours_rel = ours["mean_tpot_ms"] / ours["server_mean_itl_ms"]
    theirs_rel = theirs["mean_tpot_ms"] / theirs_server["server_mean_itl_ms"]
    print(
        f"decode: sparkfab {ours['mean_tpot_ms']:.3f} ms/token (server ITL {ours['server_mean_itl_ms']:.3f}), "
        f"vllm bench serve {theirs['mean_tpot_ms']:.3f} (server ITL {theirs_server['server_mean_itl_ms']:.3f})"
    )
    assert ours_rel == pytest.approx(theirs_rel, rel=0.02)

    # the console: our block is vLLM's, line for line in its labels and order
    def labels(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if " Serving Benchmark Result " in line)
        end = lines.index("=" * 50, start)
        return [line[:40].strip() for line in lines[start + 1 : end] if line.strip()]

    skip = {"Test:", "Maximum request concurrency:", "Peak output token throughput (tok/s):",
            "Peak concurrent requests:", "Mean TTFT at the server (ms):", "Client - server TTFT (ms):"}  # fmt: skip
    assert [x for x in labels(res.out) if x not in skip] == [x for x in labels(run.stdout) if x not in skip]
    print(
        "sparkfab bench:\n"
        + res.out[res.out.index("=") :]
        + "vllm bench serve:\n"
        + run.stdout[run.stdout.index("=") :]
    )
    # the report reads vLLM's detailed result file beside our run: the same test, side by side
    rep = cli("report", str(tmp_path / "run"), str(tmp_path / "theirs/same.json"), "-o", str(tmp_path / "rep"))
    assert rep.code == 0, rep.err
    tables = json.loads((tmp_path / "rep/tables.json").read_text())
    [row] = tables["ttft"]
    assert row["b"]["n"] == ROUNDS and row["b"]["mean"] == pytest.approx(sum(theirs["ttfts"]) / ROUNDS)
    by_run = {r["run"]: r for r in tables["latency"]}
    assert set(by_run) == {"run", "theirs"}
    assert by_run["theirs"]["p99_tpot_ms"] == pytest.approx(theirs["p99_tpot_ms"], rel=1e-4)
    assert by_run["theirs"]["p50_itl_ms"] == pytest.approx(theirs["median_itl_ms"], rel=1e-4)  # ns rounding
