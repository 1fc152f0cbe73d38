"""Property-based tests over every parser of outside data: whatever the file or answer holds,
sparkfab ends with 0 or the documented code (2 bad input, 5 unavailable), never 1 (its own
bug), and leaves the user's files as they were.

The inventories are the examples with values replaced anywhere in the tree (any YAML type, text
with quotes, newlines and control characters); recipes and model configs likewise; sample files
and run files are random bytes and torn or reshaped records."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tests.helpers.bench import run_dir_files

ALLOWED = {0, 2, 5}
#: examples per property (the slow tier; SPARKFAB_PROPERTY_EXAMPLES for more)
EXAMPLES_PER_TEST = int(os.environ.get("SPARKFAB_PROPERTY_EXAMPLES", "50"))
SETTINGS = settings(max_examples=EXAMPLES_PER_TEST, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = st.text(
    alphabet=st.sampled_from(list("ab-_.:/$`'\"\\;&|{}[]%#=\n\r\t\x00\x1b é²€0129 ")), min_size=0, max_size=24
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), TEXT
)
VALUES = st.recursive(
    SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TEXT, kids, max_size=4), max_leaves=12
)


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here] if here else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*here, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*here, i))
    return out


def _replace(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    tree = copy.deepcopy(tree)
    node = tree
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return tree


def _run(*argv: str) -> tuple[int, str]:
    from sparkfab.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def _digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _judge(folder: Path, *argv: str) -> None:
    before = _digest(folder)
    code, err = _run(*argv)
    assert code in ALLOWED and "internal error" not in err, (code, err[-600:])
    assert max((len(line) for line in err.splitlines()), default=0) <= 300
    assert "\x1b" not in err, "a control character reached the terminal"
    after = {k: v for k, v in _digest(folder).items() if k in before}
    assert after == before, "an input file changed"


EXAMPLES = {p.stem: yaml.safe_load(p.read_text()) for p in (REPO / "inventory").glob("*.yml")}
INVENTORY_PLACES = [(name, path) for name, data in EXAMPLES.items() for path in _paths(data)]


@SETTINGS
@given(place=st.sampled_from(INVENTORY_PLACES), value=VALUES)
def test_any_value_anywhere_in_an_inventory(place: tuple[str, tuple[Any, ...]], value: Any) -> None:
    name, path = place
    with tempfile.TemporaryDirectory() as d:
        inv = Path(d) / "inv.yml"
        inv.write_text(yaml.safe_dump(_replace(EXAMPLES[name], path, value), allow_unicode=True))
        _judge(Path(d), "validate", str(inv))


@SETTINGS
@given(text=st.text(max_size=400))
def test_any_text_as_an_inventory(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        inv = Path(d) / "inv.yml"
        inv.write_text(text)
        _judge(Path(d), "validate", str(inv))


RECIPE = {"description": "x", "engine": "vllm", "image": "vllm/vllm-openai:v0.32.0", "model": "org/model"}
RECIPE_KEYS = [*RECIPE, "flags", "env", "volumes", "shm_size", "entrypoint", "architecture", "config", "tp_backend"]


@SETTINGS
@given(key=st.sampled_from(RECIPE_KEYS), value=VALUES)
def test_any_value_in_a_recipe(key: str, value: Any) -> None:
    pair = copy.deepcopy(EXAMPLES["pair-1cable"])
    pair["all"]["vars"]["sparkfab"]["instances"]["llama"]["launcher"] = "evil"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "launchers").mkdir()
        (Path(d) / "launchers/evil.yml").write_text(yaml.safe_dump({**RECIPE, key: value}, allow_unicode=True))
        (Path(d) / "inv.yml").write_text(yaml.safe_dump(pair))
        _judge(Path(d), "render", str(Path(d) / "inv.yml"), "-o", str(Path(d) / "out"))


CONFIG = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}


@SETTINGS
@given(key=st.sampled_from([*CONFIG, "model_type", "num_key_value_heads", "torch_dtype"]), value=VALUES)
def test_any_value_in_a_model_config(key: str, value: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "c.json").write_text(json.dumps({**CONFIG, key: value}))
        _judge(Path(d), "estimate", "--config", str(Path(d) / "c.json"))


MAGIC = b"SPARKFAB-SAMPLES v1\n"


def _sample(header: Any, body: bytes) -> bytes:
    blob = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return MAGIC + struct.pack("<I", len(blob)) + blob + body


GOOD_HEADER = {
    "version": 1,
    "interval_s": 0.001,
    "counters": [{"path": "/c0", "device": "rocep1s0f0", "direction": "tx", "unit": 4}],
    "anchor": {"wall_ns": 0, "mono_ns": 0},
}
HEADER_PLACES = _paths(GOOD_HEADER)


@SETTINGS
@given(
    place=st.sampled_from(HEADER_PLACES),
    value=VALUES,
    body=st.binary(max_size=400),
    flags=st.sampled_from([(), ("--format", "json"), ("--window", "0:1e-12"), ("--intervals", "1ms")]),
)
def test_any_sample_file(place: tuple[Any, ...], value: Any, body: bytes, flags: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "s.smp").write_bytes(_sample(_replace(GOOD_HEADER, place, value), body))
        _judge(Path(d), "traffic", str(Path(d) / "s.smp"), *flags)


@SETTINGS
@given(data=st.binary(max_size=600))
def test_any_bytes_as_a_sample_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "s.smp").write_bytes(MAGIC + data if data[:1] == b"\x00" else data)
        _judge(Path(d), "traffic", str(Path(d) / "s.smp"))


ROW = json.loads(run_dir_files()["run/requests.jsonl"])
META = json.loads(run_dir_files()["run/run.json"])


@SETTINGS
@given(
    row_key=st.sampled_from(sorted(ROW)),
    row_value=VALUES,
    meta_key=st.sampled_from(sorted(META)),
    meta_value=VALUES,
    torn=st.integers(0, 40),
)
def test_any_run_directory(row_key: str, row_value: Any, meta_key: str, meta_value: Any, torn: int) -> None:
    rows = [json.dumps(ROW), json.dumps({**ROW, "index": 1, row_key: row_value})]
    rows[-1] = rows[-1][: len(rows[-1]) - torn]
    meta = {**META, meta_key: meta_value}
    with tempfile.TemporaryDirectory() as d:
        for rel, text in run_dir_files("r", rows=rows, meta=meta).items():
            (Path(d) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(d) / rel).write_text(text)
        _judge(Path(d), "report", str(Path(d) / "r"), "-o", str(Path(d) / "out"))


INI = "[all]\nspark-a ansible_host=10.0.0.21\nspark-b ansible_host=10.0.0.22\n"
GROUP_VARS = {"sparkfab": EXAMPLES["pair-1cable"]["all"]["vars"]["sparkfab"]}
GROUP_PLACES = _paths(GROUP_VARS)


@settings(SETTINGS, max_examples=max(5, EXAMPLES_PER_TEST // 4))  # each reads through Ansible's child
@given(place=st.sampled_from(GROUP_PLACES), value=VALUES, host_var=VALUES)
def test_any_value_in_group_vars_and_host_vars(place: tuple[Any, ...], value: Any, host_var: Any) -> None:
    """The INI path: Ansible's own reader, group_vars/ and host_vars/ beside hosts.ini."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "group_vars").mkdir()
        (Path(d) / "host_vars").mkdir()
        (Path(d) / "hosts.ini").write_text(INI)
        (Path(d) / "group_vars/all.yml").write_text(yaml.safe_dump(_replace(GROUP_VARS, place, value)))
        (Path(d) / "host_vars/spark-a.yml").write_text(yaml.safe_dump({"ansible_host": host_var}, allow_unicode=True))
        _judge(Path(d), "validate", str(Path(d) / "hosts.ini"))


PLAN_ROW = {"name": "t", "requests": 1, "prompt_tokens": 20, "output_tokens": 4}


@SETTINGS
@given(key=st.sampled_from([*PLAN_ROW, "other"]), value=VALUES, rows=st.integers(0, 3))
def test_any_value_in_a_plan_file(key: str, value: Any, rows: int) -> None:
    plan = [PLAN_ROW] * rows + [{**PLAN_ROW, key: value}]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "p.yml").write_text(yaml.safe_dump(plan, allow_unicode=True))
        _judge(Path(d), "estimate", "--plan", str(Path(d) / "p.yml"))


@SETTINGS
@given(text=st.text(max_size=600) | st.sampled_from(["", '# TYPE x histogram\nx_sum{a="}"} 1\n', "x_count 1e999\n"]))
def test_any_prometheus_text_from_a_server(text: str) -> None:
    """/metrics as the server sends it: figures or none, never an exception."""
    from sparkfab.measure.bench.vllmstats import parse_prometheus

    got = parse_prometheus(text)
    assert isinstance(got, dict) and all(isinstance(v, float) for v in got.values())


#: where a server's answer reaches sparkfab: the probe (/tokenize, /v1/completions), /version,
#: /v1/models, /metrics, a stream's SSE chunks, and battery's chat answer
SERVER_PATHS = ["/tokenize", "/v1/completions", "/version", "/v1/models", "/metrics", "/v1/chat/completions"]
ANSWERS = st.one_of(
    st.binary(max_size=300),
    VALUES.map(lambda v: json.dumps(v).encode()),
    st.lists(VALUES.map(json.dumps), max_size=4).map(lambda xs: "".join(f"data: {x}\n\n" for x in xs).encode()),
    st.sampled_from([b"[" * 50_000 + b"]" * 50_000, b'{"tokens": [1e999]}', b"data: [DONE]\n\n"]),
)


@settings(SETTINGS, max_examples=max(5, EXAMPLES_PER_TEST // 2))
@given(path=st.sampled_from(SERVER_PATHS), body=ANSWERS, status=st.sampled_from([200, 200, 404, 500]))
def test_any_server_answer(path: str, body: bytes, status: int) -> None:
    """One path answers anything (a status, a body as JSON or SSE, or bytes); the others answer
    as a small vLLM does. bench ends 0, 2 or 5; battery also 4 (a check failed)."""
    from tests.helpers.server import odd_server

    with tempfile.TemporaryDirectory() as d, odd_server(path, status, body) as url:
        _judge(
            Path(d),
            "bench", "--url", url, "--model", "m", "--plan", "P1", "--rounds", "1", "--warmup", "0",
            "--idle-seconds", "0", "--output-tokens", "4", "--timeout", "3", "-o", str(Path(d) / "run"),
        )  # fmt: skip
        code, err = _run("battery", "--url", url, "--model", "m", "--checks", "count", "--timeout", "3")
        assert code in {*ALLOWED, 4} and "internal error" not in err, (code, err[-600:])
