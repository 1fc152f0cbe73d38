"""The hostile-input table as a whole: large, and every case's name unique across the verbs'
files (a name is the case's id in pytest and in the harness's reports)."""

from __future__ import annotations

import importlib

VERBS = (
    "battery",
    "bench",
    "estimate",
    "harness",
    "init",
    "plan",
    "reaching_hosts",
    "render",
    "report",
    "sample",
    "schema",
    "traffic",
    "validate",
)


def test_the_table_is_large_and_its_names_unique():
    cases = [k for v in VERBS for k in importlib.import_module(f"tests.unit.commands.hostile.test_{v}").CASES]
    assert len(cases) >= 150
    assert len({k.id for k in cases}) == len(cases)
