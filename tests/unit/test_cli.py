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
    assert helps == {
        "table for people (default), json for programs",
        "yaml for people (default), json for programs",
        "svg for people (default), dot for programs",  # graph: a picture, or its Graphviz text
    }


def test_version_says_what_runs(monkeypatch):
    """--version: sparkfab's, Ansible's and the strategy the playbooks run with, where the content
    comes from, whether the sampler's C loop is built, and the engine parsers' releases."""
    import importlib.metadata as md
    import subprocess
    import sys

    from tests.conftest import REPO

    res = subprocess.run([sys.executable, "-m", "sparkfab", "--version"], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("sparkfab ")
    assert f"ansible-core {md.version('ansible-core')}" in lines[1] and "strategy mitogen_linear" in lines[1]
    assert f"{REPO} (a checkout)" in lines[2]
    assert lines[4] == "engines (flag tables): vllm 0.32.0, sglang 0.5.23, collective"
    off = subprocess.run(
        [sys.executable, "-m", "sparkfab", "--version"], capture_output=True, text=True, cwd=REPO,
        env={**__import__("os").environ, "SPARKFAB_MITOGEN": "0"},
    )  # fmt: skip
    assert "strategy linear" in off.stdout.splitlines()[1]


def test_a_command_line_sets_up_only_its_verb_and_that_verb_whole():
    """main() builds the parser with the verb the command line names: that verb's arguments are
    the full parser's (its sub-verbs too), and `sparkfab --help` still lists every verb."""
    from sparkfab.cli import VERBS, _verb

    def shape(p: argparse.ArgumentParser, verb: str) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(v, a.dest, tuple(a.option_strings)) for v, a in _arguments(p) if v.split(" ")[0] == verb]

    full = parser()
    for v in VERBS:
        assert shape(parser(v.name), v.name) == shape(full, v.name), v.name
    assert _verb(["-q", "apply", "inv.yml"]) == "apply" and _verb(["lab", "up", "x"]) == "lab"
    assert _verb(["completion", "bash"]) is None and _verb(["nosuch"]) is None and _verb([]) is None
    listed = next(a for a in parser("apply")._actions if isinstance(a, argparse._SubParsersAction))
    assert set(listed.choices) == {v.name for v in VERBS}
