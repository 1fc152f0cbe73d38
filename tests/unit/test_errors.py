"""sparkfab's exceptions and their exit codes, and messages that stay readable whatever the input
held (`errors`)."""

from __future__ import annotations

from sparkfab import errors
from sparkfab.errors import Exit


def test_each_kind_of_failure_carries_its_exit_code():
    codes = {
        errors.SparkfabError: Exit.BUG, errors.UsageError: Exit.USAGE, errors.EstimateError: Exit.USAGE,
        errors.BenchError: Exit.USAGE, errors.DeployError: Exit.DEPLOY, errors.LabError: Exit.DEPLOY,
        errors.VerifyError: Exit.CHECK, errors.Unavailable: Exit.UNAVAILABLE, errors.ServerError: Exit.UNAVAILABLE,
    }  # fmt: skip
    assert {cls: cls.exit_code for cls in codes} == codes
    assert set(errors.EXIT_MEANING) >= {Exit.OK, Exit.BUG, Exit.USAGE, Exit.DEPLOY, Exit.CHECK, Exit.UNAVAILABLE}


def test_a_message_shows_control_characters_instead_of_obeying_them():
    text = errors.readable("name \x1b]0;owned\x07 and \x9b2J\nnext\tline")
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert text == "name \\x1b]0;owned\\x07 and \\x9b2J\nnext\tline"


def test_a_long_line_keeps_its_culprit_and_its_reason():
    path = "/" + "a" * 500 + "/inventory.yml"
    line = errors.readable(f"{path}: File name too long", width=120)
    assert len(line) <= 120 and line.endswith("/inventory.yml: File name too long") and line.startswith("/aaa")
    blob = errors.readable("x " * 400, width=100)
    assert len(blob) <= 100 and " ... " in blob
