"""Every argument of every verb says what it is for in `--help`."""

from __future__ import annotations

import argparse

from sparkfab.cli import parser


def _arguments(p: argparse.ArgumentParser, verb: str = "") -> list[tuple[str, argparse.Action]]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                out += _arguments(sub, f"{verb} {name}".strip())
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            out.append((verb, a))
    return out


def test_every_argument_has_help():
    args = _arguments(parser())
    silent = [f"{verb}: {'/'.join(a.option_strings) or a.dest}" for verb, a in args if not a.help]
    assert len(args) > 150 and silent == []


def test_format_says_which_is_for_people():
    helps = {a.help for verb, a in _arguments(parser()) if "--format" in a.option_strings}
    assert helps == {"table for people (default), json for programs", "yaml for people (default), json for programs"}
