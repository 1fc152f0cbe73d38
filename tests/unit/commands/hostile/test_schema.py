"""Hostile and careless input to `sparkfab schema`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import FIFO, c, inv

CASES = [
    c(
        "schema-over-inventory",
        "schema -o {d}/inv.yml",
        2,
        r"inv\.yml exists and sparkfab did not write it",
        files={"inv.yml": inv()},
    ),
    c("schema-into-dir", "schema -o {d}", 2, r"is a directory"),
    c("schema-empty", ("schema", "-o", ""), 2, r"-o.*empty"),
    c("schema-new", "schema -o {d}/s.json", 0, r"", outputs=("s.json",)),
    c("schema-o-fifo", "schema -o {d}/s.json", 2, r"s\.json is not a regular file", files={"s.json": FIFO}),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
