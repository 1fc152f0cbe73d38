"""-e, --tags and --skip-tags mean what they mean to ansible-playbook: a table of command lines,
each given to a sparkfab verb's parser and run through the deploy seam (`run_playbook`), and
given as they are to `ansible-playbook` itself, on the same playbook: the tasks that ran and
the values they saw must agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab.cli import parser
from sparkfab.commands.runs import run_options
from sparkfab.push.passthrough import TAGS
from sparkfab.push.run import run_playbook
from tests.conftest import REPO

pytestmark = pytest.mark.slow

CASES = (
    [],
    ["-e", "x=1"],
    ["-e", '{"x": [1, 2], "y": "two words"}'],
    ["-e", "x=1", "-e", "x=2"],
    ["-e", "@vars.yml"],
    ["--extra-vars", "@vars.yml", "-e", "y=late"],
    ["-t", "nccl"],
    ["--tags", "nccl,engine"],
    ["--tags", "nccl", "--tags", "firewall"],
    ["--skip-tags", "nccl"],
    ["--tags", "tagged"],
    ["--tags", "untagged"],
    ["--skip-tags", "tagged"],
    ["--tags", "all", "--skip-tags", "firewall,lldp"],
    ["--tags", "never"],
    ["--tags", "always"],
    ["--skip-tags", "all"],
    ["--tags", "netplan", "-e", "x=9"],
)


def _playbook(tmp: Path) -> Path:
    tasks = [
        {"name": "always", "tags": ["always"]},
        {"name": "untagged {{ x | default('-') }} {{ y | default('-') }}"},
        {"name": "never", "tags": ["never"]},
        {"name": "never and nccl", "tags": ["never", "nccl"]},
        {"name": "nccl and engine", "tags": ["nccl", "engine"]},
        *({"name": f"tag {t}", "tags": [t]} for t in TAGS),
    ]
    for t in tasks:
        t.update({"ansible.builtin.debug": {"msg": "x"}, "changed_when": True})
    play = [{"name": "table", "hosts": "all", "gather_facts": False, "tasks": tasks}]
    (tmp / "play.yml").write_text(json.dumps(play))
    (tmp / "vars.yml").write_text("x: from-file\ny: [a, b]\n")
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (tmp / "hosts.yml").write_text(json.dumps({"all": {"hosts": {"h1": host}}}))
    return tmp / "play.yml"


def _ansible(play: Path, argv: list[str]) -> set[str]:
    """The tasks `ansible-playbook` itself ran and changed (its default output), run from the
    playbook's folder with no ansible.cfg."""
    (play.parent / "empty.cfg").write_text("")
    env = {**os.environ, "ANSIBLE_CONFIG": str(play.parent / "empty.cfg"), "ANSIBLE_NOCOLOR": "1"}
    out = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), "-i", "hosts.yml", *argv, str(play)],
        cwd=play.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr + out.stdout[-2000:]
    ran, task = set(), ""
    for line in out.stdout.splitlines():
        if line.startswith("TASK ["):
            task = line[len("TASK [") : line.rindex("]")]
        elif line.startswith("changed: [h1]"):
            ran.add(task.strip())
    return ran


def _sparkfab(play: Path, argv: list[str], work: Path) -> set[str]:
    """The tasks the same command line ran as a sparkfab verb takes it (apply's parser, its
    checks, the deploy seam)."""
    args = parser().parse_args(["apply", "inventory.yml", *argv])
    result = run_playbook(
        str(play), play.parent / "hosts.yml", "table", workdir=work, passthrough=run_options(args).passthrough
    )
    assert result.rc == 0, result
    return {t.strip() for t in result.hosts["h1"].changed_tasks}


def test_extra_vars_and_tags_run_what_ansible_playbook_runs(tmp_path, monkeypatch):
    play = _playbook(tmp_path)
    monkeypatch.chdir(tmp_path)  # -e @vars.yml is named from here, as a user names it
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    for i, argv in enumerate(CASES):
        want = _ansible(play, argv)
        got = _sparkfab(play, argv, tmp_path / f"run{i}")
        assert got == want, argv


def test_the_tags_sparkfab_names_are_the_tags_its_plays_carry(collections):
    """`--tags`' help and its check read one table; it is the tags `ansible-playbook
    --list-tags` finds in the plays (each tag that the verbs taking tags run: site.yml for apply,
    serve.yml, exporter.yml, peer_ssh.yml; linkspeed and reset run whole)."""
    found: set[str] = set()
    for play in ("site.yml", "serve.yml", "exporter.yml", "peer_ssh.yml"):
        out = subprocess.run(
            [
                str(Path(sys.executable).with_name("ansible-playbook")),
                "-i",
                "localhost,",
                "--list-tags",
                f"playbooks/{play}",
            ],
            cwd=REPO,
            env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections)},  # the roles, by FQCN
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        for line in out.stdout.splitlines():
            if "TASK TAGS: [" in line:
                found |= {t.strip() for t in line.split("[", 1)[1].rstrip("]").split(",") if t.strip()}
    assert found - {"always"} == set(TAGS)
