"""Hostile and careless input to `sparkfab sample`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import c, inv

CASES = [
    c(
        "sample-interval-zero",
        "sample --devices lo --source netdev --interval 0 --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c(
        "sample-interval-tiny",
        "sample --devices lo --source netdev --interval 1us --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c(
        "sample-interval-word",
        "sample --devices lo --source netdev --interval fast --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c("sample-duration-negative", "sample --devices lo --source netdev --duration=-1 -o {d}/s.bin", 2, r"--duration"),
    c("sample-duration-nan", "sample --devices lo --source netdev --duration nan -o {d}/s.bin", 2, r"--duration"),
    c(
        "sample-device-missing",
        "sample --devices nosuchdev0 --source netdev --duration 0.1 --root {d} -o {d}/s.bin",
        2,
        r"nosuchdev0",
    ),
    c("sample-device-traversal", "sample --devices ../../../etc --duration 0.1 -o {d}/s.bin", 2, r"\.\./\.\./\.\./etc"),
    c(
        "sample-over-existing",
        "sample --devices lo --source netdev --duration 0.1 -o {d}/s.bin",
        2,
        r"s\.bin exists",
        files={"s.bin": "precious"},
    ),
    c("sample-into-dir", "sample --devices lo --source netdev --duration 0.1 -o {d}", 2, r"is a directory"),
    c("sample-no-devices", "sample -o {d}/s.bin", 2, r"--devices"),
    c("sample-inventory-missing", "sample --inventory {d}/nope.yml --host a -o {d}/s.bin", 5, r"nope\.yml"),
    c(
        "sample-host-unknown",
        "sample --inventory {d}/inv.yml --host zz -o {d}/s.bin",
        2,
        r"zz is not a host",
        files={"inv.yml": inv()},
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
