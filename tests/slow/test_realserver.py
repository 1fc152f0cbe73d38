"""`bench`, `battery` and `report` against a real OpenAI-compatible server from PyPI:
`transformers serve` with a tiny random-weight model made here (sparkfab.lab.model), no downloads.

transformers serve has no /tokenize and refuses vLLM's ignore_eos, so this also shows the
driver finding that out and making exact text prompts with the server's own token counts."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from sparkfab.lab.model import make
from tests.helpers.bench import bench, measured_rows, plan
from tests.helpers.server import free_port, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, model name) of transformers serve on loopback, serving the tiny model."""
    root = tmp_path_factory.mktemp("realserver")
    model = make(root / "tiny")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(root / "hf"), "TRANSFORMERS_VERBOSITY": "error"}
    exe = Path(sys.executable).parent / "transformers"
    cmd = [str(exe), "serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    url = f"http://127.0.0.1:{port}"
    with serving(cmd, env, root / "serve.log", url, 180, "transformers serve"):
        yield url, str(model)


def test_bench_and_report_against_transformers_serve(server, cli, tmp_path):
    url, model = server
    p = plan(
        tmp_path,
        [
            {"name": "one", "requests": 1, "prompt_tokens": 300, "output_tokens": 24},
            {"name": "four", "requests": 4, "prompt_tokens": 200, "output_tokens": 24},
        ],
    )
    # loopback's own netdev counters, sampled at 1 ms alongside (the request and the stream cross lo)
    counters = ("--counters", "lo", "--source", "netdev", "--idle-seconds", "0.2", "--idle-below", "1e9")
    res = bench(cli, url, p, "--rounds", "2", "--label", "tiny", *counters, "-o", str(tmp_path / "run"), model=model)
    assert res.code == 0, res.out + res.err
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert meta["server"]["prompts"] == "text" and meta["server"]["ignore_eos"] is False
    rows = measured_rows(tmp_path / "run")
    assert len(rows) == 10 and [r["error"] for r in rows] == [None] * 10
    # the prompts have exactly the planned length by the server's own tokenizer, the answers the planned length
    assert [r["prompt_tokens"] for r in rows] == [300, 300] + [200] * 8
    assert all(r["completion_tokens"] == 24 for r in rows)
    streamed = 0
    for r in rows:
        stamps = [t for t, _ in r["chunks"]]
        assert r["send_ns"] < r["first_ns"] <= r["last_ns"] and stamps == sorted(stamps)
        # a chunk with text is a token; a token whose text the server holds back (the bytes of a
        # character not yet whole: the random model's prompts are salted per run, so some runs
        # meet one) comes inside a later chunk, so the chunks count at most the 24 tokens; an
        # answer held back whole comes in one chunk, and has no decode time to measure
        assert 0 < sum(n for _, n in r["chunks"]) <= 24 and r["text"]
        assert r["traffic_file"] and r["prefill_bytes"] > 0
        if r["last_ns"] > r["first_ns"]:
            assert r["decode_tps"] > 0 and r["decode_bytes"] > 0
            streamed += 1
        else:
            assert r["decode_tps"] is None and "decode_bytes" not in r
    assert streamed >= len(rows) // 2, streamed  # most answers stream token by token
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    four = summary["tests"]["four"]
    assert four["last_first_token_s"]["n"] == 2 and all(sorted(o) == [0, 1, 2, 3] for o in four["first_token_order"])
    rep = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"))
    assert rep.code == 0, rep.err
    assert (tmp_path / "rep/report.html").stat().st_size > 0 and "| one |" in rep.out


def test_battery_against_transformers_serve(server, cli):
    """The tiny model is random, so every quality check must fail, each with its evidence."""
    url, model = server
    res = cli("battery", "--url", url, "--model", model, "--context-chars", "3000", "--format", "json")
    checks = {c["name"]: c for c in json.loads(res.out)}
    assert res.code == 4 and list(checks) == ["count", "hangul", "tools", "needle", "prefix"]
    assert not checks["count"]["passed"] and "first difference at position" in checks["count"]["evidence"]
    assert not checks["hangul"]["passed"]
    assert re.fullmatch(r"\d+ replacement characters over 3 passes", checks["hangul"]["evidence"])
    assert not checks["tools"]["passed"] and checks["tools"]["evidence"].startswith("no tool call; answered")
    assert not checks["needle"]["passed"] and checks["needle"]["evidence"].endswith("(3,000 characters of context)")
    assert re.fullmatch(r"turn 1 TTFT \d+\.\d{3} s, turn 2 TTFT \d+\.\d{3} s", checks["prefix"]["evidence"])
