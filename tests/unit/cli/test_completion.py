"""Shell completion made from the CLI's own parser, run by a real bash."""

from __future__ import annotations

import subprocess

import pytest


def _complete(cli, shell_words: list[str]) -> list[str]:
    script = cli("completion", "bash").out
    words = " ".join(f"'{w}'" for w in shell_words)
    cword = len(shell_words) - 1
    probe = f'{script}\nCOMP_WORDS=({words}); COMP_CWORD={cword}; _sparkfab; printf "%s\\n" "${{COMPREPLY[@]}}"'
    res = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    return res.stdout.split()


@pytest.mark.parametrize(
    "words,expected",
    [
        (["sparkfab", "la"], ["lab"]),
        (["sparkfab", "lin"], ["linkspeed"]),
        (["sparkfab", "lab", ""], ["up", "down", "status", "wire", "exec", "reboot"]),
        (["sparkfab", "init", "r"], ["ring"]),
        (["sparkfab", "bench", "--counters"], ["--counters", "--counters-host"]),
        (["sparkfab", "lab", "up", "x.yml", "--eng"], ["--engine"]),
    ],
)
def test_bash_completes_verbs_choices_and_options(cli, words, expected):
    assert _complete(cli, words) == expected


def test_every_verb_is_offered_and_zsh_gets_bashcompinit(cli):
    from sparkfab.cli import VERBS

    assert set(_complete(cli, ["sparkfab", ""])) == {*(v.name for v in VERBS), "--help", "--version"}
    assert cli("completion", "zsh").out.startswith("autoload -U +X bashcompinit && bashcompinit\n")
