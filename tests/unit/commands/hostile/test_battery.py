"""Hostile and careless input to `sparkfab battery`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import c

CASES = [
    c("battery-closed", "battery --url {url} --model m --checks count", 5, r"cannot reach", server="closed"),
    c(
        "battery-silent",
        "battery --url {url} --model m --checks count --timeout 0.5",
        5,
        r"(no answer|timed out|Timeout)",
        server="silent",
    ),
    c(
        "battery-garbage",
        "battery --url {url} --model m --checks count --timeout 3",
        5,
        r"(HTTP|protocol|answer)",
        server="garbage",
    ),
    c("battery-checks-bogus", "battery --url http://127.0.0.1:9 --model m --checks count,bogus", 2, r"bogus"),
    c(
        "battery-context-negative",
        "battery --url http://127.0.0.1:9 --model m --context-chars=-5",
        2,
        r"--context-chars",
    ),
    c(
        "battery-context-huge",
        "battery --url http://127.0.0.1:9 --model m --context-chars 1000000000",
        2,
        r"--context-chars",
    ),
    c("battery-url-word", "battery --url nope --model m", 2, r"--url"),
    c("battery-timeout-zero", "battery --url http://127.0.0.1:9 --model m --timeout 0", 2, r"--timeout"),
    c(
        "battery-trickle-chat",
        "battery --url {url} --model m --checks count --timeout 0.5",
        5,
        r"(within 0.5 s|timed out)",
        server="trickle-chat",
    ),
    c(
        "battery-deep-chat",
        "battery --url {url} --model m --checks count --timeout 3",
        4,
        r"",
        server="deep-chat",
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
