"""Each rank's engine state, read by the shell probe a host runs: here the probe runs in a real
shell against a stand-in `docker` (answering `docker inspect -f` as Docker does) and a real pid
file, and verify's rows follow from the states."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparkfab.render.launch import PID_DIR
from sparkfab.resolve import load_plan
from sparkfab.verify import serving
from sparkfab.verify.result import FAIL, PASS
from tests.conftest import REPO
from tests.doubles.host import Answer

#: `docker inspect -f '{{.State.Status}}|{{.State.StartedAt}}|{{.State.FinishedAt}}|{{.State.ExitCode}}'`
DOCKER = """#!/bin/sh
[ "$1" = inspect ] || exit 2
case "$STATE" in
  running) echo 'running|2026-12-02T06:00:01.5Z|0001-01-01T00:00:00Z|0' ;;
  exited) echo 'exited|2026-12-02T06:00:01.5Z|2026-12-02T06:10:09.1Z|137' ;;
  *) echo "Error: No such object: $3" >&2; exit 1 ;;
esac
"""


@dataclass
class Shell:
    """A host whose commands run in a local shell (as root, as `connection.as_root` finds it)."""

    env: dict[str, str]
    pid_dir: Path

    def run(self, command: str, *args: object) -> Answer:
        if command == "id -un; id -u":
            return Answer(0, "root\n0\n")
        command = command.replace(PID_DIR, str(self.pid_dir))
        res = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=self.env, timeout=10)
        return Answer(res.returncode, res.stdout, res.stderr)


def _shell(tmp_path: Path, state: str) -> Shell:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(DOCKER)
    (bin_dir / "docker").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STATE": state}
    return Shell(env, tmp_path)


@pytest.mark.parametrize(
    "state,want",
    [
        ("running", ("running", "2026-12-02T06:00:01.5Z", "container sparkfab-glm")),
        ("exited", ("dead", "2026-12-02T06:10:09.1Z", "container sparkfab-glm exited, exit code 137")),
        ("absent", ("stopped", "", "no container")),
    ],
)
def test_docker_probe_in_a_shell(tmp_path, state, want):
    res = _shell(tmp_path, state).run(serving.probe("glm", "docker"))
    assert res.rc == 0, res.stderr
    assert serving.parse(res.stdout) == want


def test_process_probe_in_a_shell(tmp_path):
    sh = _shell(tmp_path, "")
    assert serving.parse(sh.run(serving.probe("glm", "process")).stdout)[0] == "stopped"
    (tmp_path / "glm.pid").write_text(f"{os.getpid()}\n")
    state, since, detail = serving.parse(sh.run(serving.probe("glm", "process")).stdout)
    assert (state, detail) == ("running", f"pid {os.getpid()}") and since
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "glm.pid").write_text(f"{dead.pid}\n")
    assert serving.parse(sh.run(serving.probe("glm", "process")).stdout)[0] == "dead"


def test_an_odd_answer_is_unknown_not_a_guess():
    assert serving.parse("bash: docker: command not found")[0] == "unknown"


def _states(tmp_path: Path, per_host: dict[str, str]) -> list[serving.RankState]:
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    for h in per_host:
        (tmp_path / h).mkdir(parents=True)
    remotes = {h: _shell(tmp_path / h, s) for h, s in per_host.items()}
    return serving.rank_states(plan, remotes)


def test_verify_fails_a_dead_rank_and_not_a_stopped_instance(tmp_path):
    hosts = ("spark-329f", "spark-355d", "spark-c049", "spark-3d38")
    stopped = _states(tmp_path / "a", dict.fromkeys(hosts, "absent"))
    assert serving.summary(stopped) == "stopped" and serving.results(stopped) == []
    one_dead = _states(tmp_path / "b", {**dict.fromkeys(hosts, "running"), "spark-c049": "exited"})
    assert serving.summary(one_dead) == "degraded"
    rows = serving.results(one_dead)
    assert [(r.host, r.status) for r in rows] == [(h, FAIL if h == "spark-c049" else PASS) for h in hosts]
    bad = next(r for r in rows if r.status == FAIL)
    assert "exit code 137" in bad.detail and "serve restart --instance glm" in bad.detail
    serving_all = _states(tmp_path / "c", dict.fromkeys(hosts, "running"))
    assert serving.summary(serving_all) == "serving" and all(r.status == PASS for r in serving.results(serving_all))


def test_an_unreachable_host_is_unknown(tmp_path):
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    states = serving.rank_states(plan, {})  # no connection to any host
    assert {s.state for s in states} == {"unknown"}
