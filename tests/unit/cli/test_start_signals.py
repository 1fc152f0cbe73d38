"""A signal that arrives while sparkfab starts (its parser is built, its modules load) ends it
as one that arrives later does: a line and 143 or 130, never a traceback with exit 1 (the
clean-clone run caught SIGTERM inside argparse's add_argument)."""

from __future__ import annotations

import pytest

from sparkfab import cli
from sparkfab.errors import Terminated


@pytest.mark.parametrize("raised,code,said", [(Terminated, 143, "terminated"), (KeyboardInterrupt, 130, "interrupted")])
def test_a_signal_while_the_parser_is_built(monkeypatch, capsys, raised, code, said):
    def parser():
        raise raised

    monkeypatch.setattr(cli, "parser", parser)
    assert cli.main(["render", "x.yml"]) == code
    assert capsys.readouterr().err == f"sparkfab: {said}\n"
