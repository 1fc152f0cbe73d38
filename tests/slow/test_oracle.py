"""`sparkfab validate` asks the vLLM installed here (.venv-vllm, the CPU build) what it would say
of every launch: its parser and post-parse checks, the engine arguments it builds and, with the
checkpoint on this machine, its model config against the tensor-parallel size. What it refuses
is an invalid inventory, in vLLM's own words, before any host is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sparkfab import engines, oracle
from tests.conftest import REPO

#: a small Llama checkpoint's config (no weights: vLLM reads only this to build its model config)
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 256,
    "torch_dtype": "float32",
    "rms_norm_eps": 1e-5,
}


@pytest.fixture
def on(monkeypatch, tmp_path):
    """The oracle on, its cache and the Hugging Face cache in this test's directory."""
    if not oracle.engine_python(engines.engine("vllm")).exists():
        pytest.skip("no vLLM environment (.venv-vllm, made by scripts/setup.sh)")
    monkeypatch.setenv("SPARKFAB_ORACLE", "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path


def _ring4(tmp: Path, name: str, **instance: object) -> Path:
    data = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    data["all"]["vars"]["sparkfab"]["instances"]["glm"].update(instance)
    out = tmp / f"{name}.yml"
    out.write_text(yaml.safe_dump(data))
    return out


def _snapshot(tmp: Path, model_id: str, config: dict) -> Path:
    """A checkpoint in the Hugging Face cache as `hf download` leaves it."""
    snap = tmp / "hf" / "hub" / f"models--{model_id.replace('/', '--')}" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return snap


def test_a_flag_vllm_refuses_after_parsing_stops_validate(on, cli):
    """`--enable-auto-tool-choice` parses (the flag table accepts it) but vLLM's post-parse check
    wants a tool-call parser with it: the engine would exit at start on every Spark."""
    inv = _ring4(on, "tools", flags={"enable-auto-tool-choice": True})
    res = cli("validate", str(inv))
    assert res.code == 2, res.out + res.err
    assert "vLLM 0.32.0 refuses the launch of rank(s) 0, 1, 2, 3" in res.err
    assert "--enable-auto-tool-choice requires --tool-call-parser" in res.err
    # what it is doing is said before vLLM runs; a launch judged before is not judged again
    assert "vLLM's own parser is checking 4 launch(es) of ring4" in res.err
    fixed = _ring4(on, "tools-fixed", flags={"enable-auto-tool-choice": True, "tool-call-parser": "glm45"})
    first = cli("validate", str(fixed))
    assert first.code == 0 and "own parser is checking" in first.err
    again = cli("validate", str(fixed))
    assert again.code == 0 and "own parser is checking" not in again.err
    # every verdict is kept: the next validate of the same launches does not start vLLM again
    assert len(list((on / "cache/sparkfab/oracle").glob("*.json"))) == 8


def test_the_checkpoints_config_is_checked_when_it_is_here(on, cli):
    """With the checkpoint in this machine's Hugging Face cache, vLLM builds its model config:
    a context longer than the model's positions is refused with vLLM's reason; a length inside
    them passes (and the same TP4 against 8 heads, 4 KV heads holds)."""
    model = "someorg/Tiny-Llama"
    _snapshot(on, model, CONFIG)
    long = _ring4(on, "long", model=model, flags={"max-model-len": 4096})
    res = cli("validate", str(long))
    assert res.code == 2, res.out + res.err
    assert "refuses the launch of rank(s) 0" in res.err
    assert "max_model_len (4096) is greater than the derived max_model_len" in res.err
    short = _ring4(on, "short", model=model, flags={"max-model-len": 128})
    assert cli("validate", str(short)).code == 0


def test_without_vllm_validate_says_it_used_the_flag_table(monkeypatch, cli, tmp_path):
    monkeypatch.setenv("SPARKFAB_ORACLE", "on")
    monkeypatch.setenv("SPARKFAB_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    res = cli("validate", str(REPO / "inventory/ring4.yml"))
    assert res.code == 0, res.err
    text = res.out + res.err
    assert f"no vLLM at {tmp_path / 'no-such-python'}" in text and "vllm-serve-flags.txt" in text


def test_a_cache_that_cannot_be_written_still_judges_and_says_so(on, cli):
    """A read-only cache (a read-only home): vLLM's verdicts still decide validate, and a note
    says they were not kept (the harness's EV_home_ro_ini ended here with exit 5)."""
    import os

    cache = on / "cache"
    cache.mkdir()
    (cache / "sparkfab").write_text("a file where the cache's folder would be\n")
    res = cli("validate", str(_ring4(on, "ro")))
    assert res.code == 0, res.err
    assert "the engine's verdicts were not kept" in res.err and "every launch parsed by vLLM" in res.out + res.err
    assert os.path.isfile(cache / "sparkfab")


def test_several_inventories_start_each_engines_parser_once(on, cli):
    """`validate A B C`: each engine's parser checks the launches of all of them in one start (one
    note per engine, not one per inventory), each inventory gets its own line, and one that its
    engine refuses fails the run (exit 2) without hiding the verdicts on the others."""
    bad = _ring4(on, "tools", flags={"enable-auto-tool-choice": True})
    files = [str(REPO / f"inventory/{n}.yml") for n in ("ring4", "pair-1cable", "pair-sglang")] + [str(bad)]
    res = cli("validate", *files)
    assert res.code == 2, res.out + res.err
    assert res.err.count("vLLM's own parser is checking") == 1 and "of 4 inventories" in res.err
    sglang = oracle.engine_python(engines.engine("sglang")).exists()
    assert res.err.count("SGLang's own parser is checking") == (1 if sglang else 0)
    for f in files[:3]:
        assert f"{f}: valid" in res.err
    assert "--enable-auto-tool-choice requires --tool-call-parser" in res.err
    # the verdicts are kept: each inventory alone now starts no parser
    again = cli("validate", files[0])
    assert again.code == 0 and "own parser is checking" not in again.err


def test_an_inventory_that_moved_its_sparks_is_judged_from_the_kept_verdicts(on, cli, monkeypatch):
    """Another site's ring of the same recipe (every address changed) starts no engine: vLLM
    judged the same argvs, with the addresses as stand-ins, for the first; a refusal on the moved
    one is in vLLM's words too."""
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "0")  # no warm server: a second ask would start vLLM again
    first = cli("validate", str(_ring4(on, "here", flags={"max-num-seqs": 8})))
    assert first.code == 0 and "own parser is checking 4 launch(es)" in first.err, first.err
    moved = on / "there.yml"
    moved.write_text((on / "here.yml").read_text().replace("192.168.", "172.20.").replace("10.0.0.", "10.50.7."))
    again = cli("validate", str(moved))
    assert again.code == 0 and "own parser is checking" not in again.err, again.err
    assert "every launch parsed by vLLM" in again.out + again.err


def test_a_new_inventory_is_judged_by_the_warm_engine_as_a_fresh_one_judges_it(on, cli, monkeypatch):
    """The first validate that asks vLLM starts a server that keeps vLLM imported; the next
    validate of another new inventory is answered by that same process (the kernel names the
    socket's peer), with the verdict a fresh vLLM process gives. Stopping it ends the process
    and takes its socket away."""
    import os
    import socket
    import struct
    import time

    spec = engines.engine("vllm")
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "300")
    path = oracle.warm_socket(spec, oracle.engine_python(spec))
    assert path is not None
    try:
        first = cli("validate", str(_ring4(on, "first", flags={"max-num-seqs": 8})))
        assert first.code == 0 and "own parser is checking 4 launch(es)" in first.err, first.err
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(path))
            pid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        refused = cli("validate", str(_ring4(on, "second", flags={"enable-auto-tool-choice": True})))
        assert refused.code == 2 and "--enable-auto-tool-choice requires --tool-call-parser" in refused.err
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(path))
            assert struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0] == pid
        # a fresh vLLM process (no server, another cache) says the same of the same launches
        monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "0")
        monkeypatch.setenv("XDG_CACHE_HOME", str(on / "cache-fresh"))
        fresh = cli("validate", str(_ring4(on, "second", flags={"enable-auto-tool-choice": True})))
        assert fresh.code == 2
        said = [ln for ln in refused.err.splitlines() if "refuses the launch" in ln]
        assert said and said == [ln for ln in fresh.err.splitlines() if "refuses the launch" in ln]
    finally:
        monkeypatch.setenv("XDG_CACHE_HOME", str(on / "cache"))
        stopped = oracle.stop_warm(spec)
    assert stopped == pid
    deadline, gone = time.monotonic() + 10, False
    while not gone and time.monotonic() < deadline:
        try:  # this test ran validate in its own process: the server is its child until reaped
            gone = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            gone = not os.path.exists(f"/proc/{pid}")
        time.sleep(0.05)
    assert gone and not path.exists()
