"""Which warm server answers a launch: one per install, oracle code, verdict cache and engine
environment. The verdicts themselves come from the engines (tests/slow/test_oracle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from sparkfab import engines, oracle


def test_a_server_answers_only_for_the_environment_it_was_started_in(monkeypatch, tmp_path):
    spec, py = engines.engine("vllm"), Path(sys.executable)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HOME", raising=False)
    here = oracle.warm_socket(spec, py)
    assert here is not None and here == oracle.warm_socket(spec, py)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # another checkpoint cache: another model config
    assert oracle.warm_socket(spec, py) != here
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("LANG", "C")  # what the engine's checks do not read changes nothing
    assert oracle.warm_socket(spec, py) == here
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))  # another verdict cache
    assert oracle.warm_socket(spec, py) != here
    assert oracle.warm_socket(engines.engine("sglang"), py) not in (None, here)
