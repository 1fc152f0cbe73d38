"""Benchmark plans (`measure.plans`): the paper's P1-P6, the lab's L1-L4, a plan file, and what
is refused."""

from __future__ import annotations

import pytest

from sparkfab.errors import BenchError
from sparkfab.measure import plans


def test_the_papers_plan_the_labs_and_a_selection():
    assert [t.name for t in plans.select(None)] == ["P1", "P2", "P3", "P4", "P5", "P6"]
    assert [(t.name, t.requests, t.prompt_tokens, t.output_tokens) for t in plans.select("lab")] == [
        ("L1", 1, 2048, 16), ("L2", 1, 8192, 16), ("L3", 2, 4096, 16), ("L4", 1, 128, 32),
    ]  # fmt: skip
    assert [t.name for t in plans.select("P4, L2")] == ["P4", "L2"]
    assert {t.output_tokens for t in plans.select("P1,P2", output_tokens=64)} == {64}


def test_the_tests_warmed_up_before_are_each_larger_than_all_before_them():
    assert [t.name for t in plans.warmed(plans.select("lab"))] == ["L1", "L2"]  # L3 2 x 4,096 is not larger
    assert [t.name for t in plans.warmed(plans.select(None))] == ["P1", "P2", "P3", "P5"]
    assert [t.name for t in plans.warmed(plans.select("L2,L1,L4"))] == ["L2"]
    assert plans.warmed([]) == []


def test_a_plan_file_and_what_it_may_not_hold(tmp_path):
    good = tmp_path / "plan.yml"
    good.write_text("- {name: short, requests: 2, prompt_tokens: 512, output_tokens: 8}\n")
    (t,) = plans.select(str(good))
    assert (t.name, t.requests, t.prompt_tokens, t.output_tokens) == ("short", 2, 512, 8)
    with pytest.raises(BenchError, match="unknown test"):
        plans.select("P9")
    bad = tmp_path / "bad.yml"
    bad.write_text("- {name: '../x', requests: 1, prompt_tokens: 5, output_tokens: 1}\n")
    with pytest.raises(BenchError, match="not a short name"):
        plans.select(str(bad))
