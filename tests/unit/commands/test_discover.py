"""`sparkfab discover`'s own options: how long it listens, and its progress on stderr."""

from __future__ import annotations

import argparse

from sparkfab.commands import discover_cmd
from sparkfab.discover.hosts import SWITCH_WAIT_S


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("-q", "--quiet", action="store_true")
    discover_cmd._args(p)
    return p.parse_args(list(argv))


def test_it_listens_a_switchs_interval_unless_told(capsys):
    assert _parse("10.0.0.1").wait == SWITCH_WAIT_S > 30
    assert _parse("10.0.0.1", "--wait", "5").wait == 5
    discover_cmd._say(_parse("10.0.0.1"))("discover: listening")
    discover_cmd._say(_parse("-q", "10.0.0.1"))("discover: not shown")
    assert capsys.readouterr().err == "discover: listening\n"
