"""Hostile and careless input to `sparkfab plan`: the cases (the table's parts: table.py; how each
runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import bomb, c, validate

CASES = [
    # the same loader behind every verb that reads an inventory
    validate("plan-alias-bomb", bomb(), r"expands to more than", verb="plan {inv}"),
    validate("plan-non-utf8", b"\xff\xff", r"not UTF-8", verb="plan {inv}"),
    validate("plan-vars-list", "all:\n  vars: [1]\n", r"all\.vars", verb="plan {inv}"),
    c("plan-missing-file", "plan {d}/nope.yml", 5, r"nope\.yml"),
    c("plan-bad-format", "plan {d}/nope.yml --format xml", 2, r"invalid choice: 'xml'"),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
