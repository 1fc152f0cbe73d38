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


def _class_whose_body_meets(signal_raised):
    """A class statement during which the signal arrives in a descriptor's __set_name__, as a
    SIGTERM met `facts.nft.Ruleset` while `verify.run` was imported on a loaded CI machine:
    Python 3.11 raises a RuntimeError from it."""

    class Field:
        def __set_name__(self, owner, name):
            raise signal_raised

    class Ruleset:
        document = Field()

    return Ruleset


@pytest.mark.parametrize("raised,code,said", [(Terminated, 143, "terminated"), (KeyboardInterrupt, 130, "interrupted")])
def test_a_signal_that_python_wrapped_during_an_import(monkeypatch, capsys, raised, code, said):
    from sparkfab import __main__ as entry

    with pytest.raises(Exception) as wrapped:  # what the interpreter makes of it, whichever it is
        _class_whose_body_meets(raised)
    assert not isinstance(wrapped.value, KeyboardInterrupt)

    def parser(only=None):  # the parser's imports meet it
        _class_whose_body_meets(raised)

    monkeypatch.setattr(cli, "parser", parser)
    assert cli.main(["render", "x.yml"]) == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"

    def handler(args):  # a verb's lazy import meets it
        _class_whose_body_meets(raised)

    monkeypatch.setattr(cli, "parser", lambda only=None: _Parsed(handler))
    assert cli.main(["render", "x.yml"]) == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"

    def main():  # sparkfab.cli's own imports meet it, before main's handlers are in place
        _class_whose_body_meets(raised)

    monkeypatch.setattr(cli, "main", main)
    assert entry.run() == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"


def test_an_error_no_signal_caused_is_still_a_bug(monkeypatch, capsys, tmp_path):
    import tempfile

    from sparkfab.errors import Exit

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the traceback is written

    def handler(args):
        raise RuntimeError("a real one")

    monkeypatch.setattr(cli, "parser", lambda only=None: _Parsed(handler))
    assert cli.main(["render", "x.yml"]) == Exit.BUG
    err = capsys.readouterr().err
    assert err.startswith("sparkfab: internal error: RuntimeError('a real one')"), err
    assert "a real one" in next(tmp_path.glob("sparkfab-crash-*.txt")).read_text()


class _Parsed:
    def __init__(self, handler):
        self.handler = handler

    def parse_args(self, argv):
        return argparse.Namespace(handler=self.handler, verbose=0, quiet=False)
