"""--limit means what it means to ansible-playbook: a table of patterns, each matched by sparkfab
(the verbs that change hosts, and the read-only verbs) and by `ansible-playbook --list-hosts`
on the same rendered inventory, from the same working directory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab.cluster.limits import files_here, selected
from sparkfab.cluster.target import Target
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from tests.conftest import REPO

pytestmark = pytest.mark.slow

PATTERNS = (
    "spark-0*",
    "all:!spark-03",
    "spark-01:spark-05",
    "spark-01,spark-08",
    "all[0:2]",
    "all[-1]",
    "~spark-0[2-4]",
    "spark-0*:&~.*[13579]$",
    "all:!~spark-0[1-6]",
    "@retry",
    "@retry:!spark-07",
)


def _ansible(inventory: Path, limit: str, cwd: Path) -> list[str]:
    play = cwd / "list.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks: []\n")
    out = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), "--list-hosts"]
        + ["--limit", limit, str(play)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    block = out.stdout.split("hosts (", 1)[1].split("\n", 1)[1]
    return sorted(m for m in re.findall(r"^\s{6}(\S+)\s*$", block, re.M))


def test_every_verbs_limit_selects_what_ansible_playbook_lists(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "retry").write_text("spark-06\nspark-07\n")
    target = Target.load(str(REPO / "inventory/switch8-crs804-200.yml"))
    write_tree(render(target.plan), tmp_path / "tree")
    for limit in PATTERNS:
        want = _ansible(tmp_path / "tree" / "inventory.yml", limit, tmp_path)
        assert want, limit  # each pattern selects something
        assert sorted(selected(target.plan, tmp_path / "tree", files_here(limit))) == want, limit  # apply, serve, reset
        assert sorted(target.limited(limit) or []) == want, limit  # verify, preflight
