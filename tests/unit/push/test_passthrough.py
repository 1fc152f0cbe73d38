"""-e, --tags and --skip-tags as the verbs take them: checked before any host is contacted
(what ansible-playbook makes of them is tests/slow/test_passthrough_table.py)."""

from __future__ import annotations

import os

import pytest

from sparkfab.cli import parser
from sparkfab.commands.deploy_cmd import WHOLE_FLIP
from sparkfab.commands.runs import run_options
from sparkfab.errors import Unavailable, UsageError
from sparkfab.files.userfile import BadFile
from sparkfab.push.passthrough import TAGS, PassThrough


def passthrough(args, whole=None):
    """The -e, --tags and --skip-tags of a verb's run options, checked at the command boundary."""
    return run_options(args, whole).passthrough


def _args(*argv: str):
    return parser().parse_args(["apply", "inventory/ring4.yml", *argv])


def test_every_verb_that_runs_a_play_takes_them():
    for verb in (["apply"], ["serve", "start"], ["linkspeed"], ["reset"], ["exporter", "start"], ["peer-ssh"]):
        argv = [*verb, "inventory/ring4.yml", *(["100e"] if verb == ["linkspeed"] else [])]
        args = parser().parse_args([*argv, "-l", "spark-1", "-e", "a=1", "-t", "nccl", "--skip-tags", "engine"])
        assert (args.limit, args.extra_vars, args.tags, args.skip_tags) == ("spark-1", ["a=1"], ["nccl"], ["engine"])


def test_they_reach_ansible_playbook_in_order_after_sparkfabs_own():
    got = passthrough(_args("-e", "a=1", "--tags", "nccl,engine", "-e", '{"b": 2}', "--skip-tags", "lldp"))
    assert got == PassThrough(("a=1", '{"b": 2}'), ("nccl,engine",), ("lldp",))
    assert got.argv() == ["-e", "a=1", "-e", '{"b": 2}', "--tags", "nccl,engine", "--skip-tags", "lldp"]
    assert passthrough(_args()).argv() == []


def test_an_unknown_tag_is_refused_with_the_tags_there_are():
    with pytest.raises(UsageError) as exc:
        passthrough(_args("--tags", "nccl,ncl"))
    assert "ncl is not a tag of sparkfab's plays" in str(exc.value)
    assert all(t in str(exc.value) for t in TAGS) and "always" in str(exc.value)
    for special in ("all", "tagged", "untagged", "never", "always"):
        assert passthrough(_args("--skip-tags", special)).skip_tags == (special,)


def test_an_extra_vars_file_is_named_absolute_and_must_be_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vars.yml").write_text("a: 1\n")
    assert passthrough(_args("-e", "@vars.yml")).extra_vars == (f"@{tmp_path / 'vars.yml'}",)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(BadFile):
        passthrough(_args("-e", "@fifo"))
    with pytest.raises(Unavailable, match="no such -e file"):
        passthrough(_args("-e", "@missing.yml"))
    with pytest.raises(UsageError, match="an empty value"):
        passthrough(_args("-e", " "))


def test_a_flip_refuses_tags_and_says_why():
    args = parser().parse_args(["linkspeed", "inventory/ring4.yml", "100e", "--tags", "nccl"])
    with pytest.raises(UsageError, match="a flip pushes the NCCL environment"):
        passthrough(args, WHOLE_FLIP)
    assert passthrough(parser().parse_args(["linkspeed", "inventory/ring4.yml", "100e", "-e", "a=1"]), WHOLE_FLIP)


def test_the_read_only_verbs_take_l_for_limit_too():
    for verb in ("verify", "preflight"):
        assert parser().parse_args([verb, "inventory/ring4.yml", "-l", "spark-1"]).limit == "spark-1"
