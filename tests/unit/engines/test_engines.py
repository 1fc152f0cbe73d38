"""The engine seam's registry (`engines`): every engine by the name recipes use, which of them
serve an OpenAI-compatible API, and which the lab can serve."""

from __future__ import annotations

import pytest

from sparkfab import engines


def test_every_engine_is_found_by_its_name_and_another_name_is_refused():
    assert list(engines.ENGINES) == ["vllm", "sglang", "collective"]
    assert all(engines.engine(n).name == n for n in engines.ENGINES)
    with pytest.raises(ValueError, match="not one sparkfab launches \\(vllm, sglang, collective\\)"):
        engines.engine("trtllm")


def test_what_bench_reads_and_what_the_lab_serves():
    assert [e.name for e in engines.served()] == ["vllm", "sglang"]  # the collective has no /metrics
    assert [e.name for e in engines.in_lab()] == ["vllm", "collective"]  # SGLang's CPU build needs sgl-kernel
