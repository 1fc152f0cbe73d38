"""Hostile and careless input to `sparkfab init`: the cases (the table's parts: table.py; how each
runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import c

CASES = [
    c("init-cluster-empty", ("init", "pair", "--cluster", ""), 2, r"--cluster ''"),
    c("init-cluster-newline", ("init", "pair", "--cluster", "abc\n"), 2, r"--cluster 'abc\\n'"),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
