"""A signal that arrives while sparkfab starts (its parser is built, its modules load) ends it
as one that arrives later does: a line and 143 or 130, never a traceback with exit 1 (the
clean-clone run caught SIGTERM inside argparse's add_argument)."""

from __future__ import annotations

import argparse

import pytest

from sparkfab import cli
from sparkfab.proc import Terminated


@pytest.mark.parametrize("raised,code,said", [(Terminated, 143, "terminated"), (KeyboardInterrupt, 130, "interrupted")])
def test_a_signal_while_the_parser_is_built(monkeypatch, capsys, raised, code, said):
    def parser(only=None):
        raise raised

    monkeypatch.setattr(cli, "parser", parser)
    assert cli.main(["render", "x.yml"]) == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"


@pytest.mark.parametrize(
    "cause,code,said", [(Terminated(), 143, "terminated"), (KeyboardInterrupt(), 130, "interrupted")]
)
def test_an_ansible_run_ended_by_a_signal_exits_as_that_signal(monkeypatch, capsys, cause, code, said):
    """A verb whose Ansible run a SIGTERM ended (`lab down`, systemd, `timeout`) exits 143, one
    that Ctrl-C ended 130: the run's Interrupted carries which as its cause."""
    from sparkfab.push.run import Interrupted, RunResult

    def handler(args):
        raise Interrupted(RunResult(130, "canceled", {}, (), "")) from cause

    class Parser:
        def __init__(self, only=None):
            self.only = only

        def parse_args(self, argv):
            return argparse.Namespace(handler=handler, verbose=0, quiet=False)

    monkeypatch.setattr(cli, "parser", Parser)
    assert cli.main(["apply", "x.yml"]) == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"
