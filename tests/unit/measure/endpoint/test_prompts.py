"""Exact prompts: token ids where the server tokenizes, text measured with the server's own counts
where it does not; what the server accepts is found by probing it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkfab.errors import BenchError, ServerError
from sparkfab.measure.endpoint.prompts import HEAD, TextPrompts, TokenPrompts, probe
from tests.helpers.bench import bench, measured_rows, plan

COSTS = {" ring": 1, " all-reduce": 3, " machines.": 2, " segment": 1, " Prefill": 2, " bursts;": 2, " tokens.": 2}


def _count(text: str) -> int:
    """A tokenizer that splits on spaces and charges COSTS per word, 2 for the head."""
    assert text.startswith(HEAD)
    return 2 + sum(COSTS[" " + w] for w in text[len(HEAD) :].split())


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=2, max_value=5000), seed=st.integers(0, 3), index=st.integers(0, 3))
def test_text_prompts_have_exactly_the_planned_length(n, seed, index):
    prompts = TextPrompts(COSTS, head_tokens=2, seed=seed)
    assert _count(prompts.make(n, "P1", 0, index)) == n


def test_text_prompts_differ_per_request_and_round_and_repeat_per_seed():
    prompts = TextPrompts(COSTS, head_tokens=2, seed=7)
    made = {(r, i): prompts.make(800, "P4", r, i) for r in range(3) for i in range(4)}
    assert len(set(made.values())) == 12
    assert len({p[: len(HEAD) + 40] for p in made.values()}) == 12  # they differ from the start
    assert TextPrompts(COSTS, 2, seed=7).make(800, "P4", 1, 2) == made[(1, 2)]


def test_token_prompts_are_exact_and_differ():
    prompts = TokenPrompts(list(range(100, 160)), seed=1)
    a, b = prompts.make(1000, "P2", 0, 0), prompts.make(1000, "P2", 1, 0)
    assert len(a) == len(b) == 1000 and a[:16] != b[:16]


def test_a_prompt_shorter_than_the_head_is_refused():
    with pytest.raises(BenchError, match="a prompt of 1 tokens is shorter than the text head"):
        TextPrompts(COSTS, head_tokens=2, seed=0).make(1, "x", 0, 0)


def _server(count):
    """An httpx transport playing a server without /tokenize whose count is `count(text)`."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/tokenize":
            return httpx.Response(404, json={"detail": "Not Found"})
        body = json.loads(request.content)
        if "ignore_eos" in body:
            return httpx.Response(422, json={"detail": "Unexpected fields in the request: {'ignore_eos'}"})
        return httpx.Response(200, json={"usage": {"prompt_tokens": count(body["prompt"]), "completion_tokens": 1}})

    return httpx.MockTransport(handle)


def _probe(count):
    async def go():
        async with httpx.AsyncClient(base_url="http://server", transport=_server(count)) as c:
            return await probe(c, "m", 0)

    return asyncio.run(go())


def test_probe_measures_words_with_the_servers_count():
    info, prompts = _probe(lambda text: 1 + len(text.split()))  # one token per word, plus a BOS
    assert info.prompts == "text" and not info.ignore_eos and info.head_tokens == 2
    assert 1 + len(prompts.make(333, "P1", 0, 0).split()) == 333


def test_probe_refuses_a_count_that_does_not_add_up():
    with pytest.raises(ServerError) as err:
        _probe(lambda text: 1 + len(text.split()) + (5 if len(text) > 200 else 0))  # long texts cost extra
    assert str(err.value).startswith("the server's token count does not add up word by word (")
    assert str(err.value).endswith("so exact text prompts cannot be made; give the server a /tokenize endpoint")


def test_transformers_like_server_gets_text_prompts_without_ignore_eos(double, cli, tmp_path):
    url = double("--dialect", "hf", "--token-interval-s", "0.001")
    p = plan(
        tmp_path,
        [
            {"name": "one", "requests": 1, "prompt_tokens": 700, "output_tokens": 12},
            {"name": "four", "requests": 4, "prompt_tokens": 300, "output_tokens": 12},
        ],
    )
    res = bench(cli, url, p, "--rounds", "2", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.out + res.err
    assert "server: text prompts measured with the server's own token counts (no /tokenize); no ignore_eos" in res.out
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert meta["server"] == {"prompts": "text", "ignore_eos": False, "head_tokens": len(HEAD)}
    rows = measured_rows(tmp_path / "run")
    assert len(rows) == 10 and all(r["error"] is None for r in rows)
    assert all(r["prompt_tokens"] == r["prompt_tokens_planned"] for r in rows)  # the server's own count
    assert all(r["completion_tokens"] == 12 and r["decode_tps"] for r in rows)


def test_transformers_like_server_stopping_early_is_rejected(double, cli, tmp_path):
    url = double("--dialect", "hf", "--drop-tokens", "2", "--token-interval-s", "0.001")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 100, "output_tokens": 20}])
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "-o", str(tmp_path / "run"))
    assert res.code == 5
    assert measured_rows(tmp_path / "run")[0]["error"] == "rejected: output 18 tokens, planned 20"


def test_two_runs_get_different_prompts_of_the_same_lengths(tmp_path):
    """An engine that kept its prefix cache (a second run at the same speed, or a flip without a
    restart) must prefill again: each run salts its prompts' seed, and a resumed run keeps its salt."""
    from sparkfab.measure.bench import Options, Run

    runs = [Run(Options(url="http://127.0.0.1:1", model="m", out=tmp_path / f"r{i}"), []) for i in range(2)]
    assert runs[0].salt != runs[1].salt
    a, b = (TokenPrompts(list(range(100)), f"0:{r.salt}").make(64, "P1", 0, 0) for r in runs)
    assert a != b and len(a) == len(b) == 64
    (tmp_path / "r0").mkdir()
    (tmp_path / "r0/run.json").write_text(json.dumps({"prompt_salt": runs[0].salt}))
    resumed = Run(Options(url="http://127.0.0.1:1", model="m", out=tmp_path / "r0", resume=True), [])
    assert resumed.salt == runs[0].salt
