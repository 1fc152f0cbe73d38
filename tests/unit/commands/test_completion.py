"""Shell completion made from the CLI's own parser, run by a real bash, zsh and fish."""

from __future__ import annotations

import shlex
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
        # the values an option takes: its choices, or the tags of sparkfab's plays
        (["sparkfab", "verify", "x.yml", "--format", ""], ["table", "json"]),
        (["sparkfab", "apply", "x.yml", "--tags", "n"], ["netplan", "nccl", "never"]),
        (["sparkfab", "serve", "start", "x.yml", "-t", "e"], ["engine", "exporter"]),
        (["sparkfab", "discover", "--link-speed", "1"], ["100e", "100"]),
    ],
)
def test_bash_completes_verbs_choices_and_options(cli, words, expected):
    assert _complete(cli, words) == expected


def test_every_verb_is_offered_and_zsh_gets_bashcompinit(cli):
    from sparkfab.cli import VERBS

    assert set(_complete(cli, ["sparkfab", ""])) == {*(v.name for v in VERBS), "--help", "--version"}
    assert "autoload -U +X bashcompinit && bashcompinit\n" in cli("completion", "zsh").out


def _fish(cli, line: str) -> dict[str, str]:
    """What fish itself offers for `line` (`complete -C`): candidate -> its description."""
    script = cli("completion", "fish").out
    res = subprocess.run(
        ["fish", "--no-config", "-c", f"{script}\ncomplete -C {shlex.quote(line)}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict((x.split("\t", 1) + [""])[:2] for x in res.stdout.splitlines())


def test_fish_completes_verbs_options_and_values_with_what_they_mean(cli):
    from sparkfab.cli import VERBS
    from sparkfab.push.passthrough import TAGS

    verbs = _fish(cli, "sparkfab ")
    assert set(verbs) >= {v.name for v in VERBS} and verbs["apply"].startswith("Render, then push")
    assert _fish(cli, "sparkfab lab ").keys() == {"up", "down", "status", "wire", "exec", "reboot"}
    assert _fish(cli, "sparkfab apply --sk") == {"--skip-tags": "not the tasks tagged so"}
    tags = _fish(cli, "sparkfab apply x.yml --tags ")
    assert all(tags[t] == meaning[:80] for t, meaning in TAGS.items()) and "always" in tags
    assert set(_fish(cli, "sparkfab reset x.yml -t n")) == {"netplan", "nccl", "never"}
    assert set(_fish(cli, "sparkfab verify x.yml --format ")) == {"table", "json"}


def test_zsh_loads_the_script_through_bashcompinit(cli):
    script = cli("completion", "zsh").out
    probe = f"{script}\n(( $+functions[_sparkfab] )) && complete -p sparkfab"
    res = subprocess.run(["zsh", "-f", "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0 and "_sparkfab" in res.stdout and not res.stderr, res.stderr
    # and bash reads it too (the same script, sourced by a bash user by mistake, is not a syntax error)
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0
