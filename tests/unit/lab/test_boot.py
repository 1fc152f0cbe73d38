"""Waiting for a lab Spark's boot, without root: a machine whose supervisor has ended is
reported at once with the end of its console, not after the whole boot timeout."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkfab.errors import LabError
from sparkfab.lab import boot, machine
from sparkfab.lab.spec import Node


def _started(p: subprocess.Popen[bytes], marker: str) -> None:
    """Until the child has exec'd its command (before that, /proc shows the parent's)."""
    deadline = time.monotonic() + 10
    while marker.encode() not in Path(f"/proc/{p.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, f"{p.args} did not start"
        time.sleep(0.01)


def _stopped(tmp_path: Path, name: str, console: str) -> machine.Machine:
    """A lab machine whose supervisor has ended (its pid file names a process that exited),
    with `console` as what it printed."""
    d = tmp_path / "machines" / name
    d.mkdir(parents=True)
    m = machine.Machine(Node(name, f"sf-x-{name}", "spark"), d)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    m.pidfile.write_text(f"{gone.pid}\n")
    m.log.write_text(console)
    return m


def test_a_machine_that_stopped_is_reported_at_once_with_its_console(tmp_path):
    m = _stopped(
        tmp_path, "s1", "\x1b[0;1;31mFAILED\x1b[0m Failed to mount overlay\nsh: mount: Device or resource busy\n"
    )
    t0 = time.monotonic()
    with pytest.raises(LabError, match=r"s1 stopped while it booted.*\n  FAILED Failed to mount overlay\n  sh: mount"):
        boot.wait_booted(m, timeout=60)
    assert time.monotonic() - t0 < 5


def test_a_reused_pid_is_not_the_supervisor(tmp_path):
    """The pid file of a supervisor that ended names whatever process has that pid now (another
    lab's machine, say): it is not this machine's, so nothing signals or searches it."""
    d = tmp_path / "machines" / "s3"
    d.mkdir(parents=True)
    m = machine.Machine(Node("s3", "sf-x-s3", "spark"), d)
    other = subprocess.Popen(["sh", "-c", "sleep 30; : /var/lib/sparkfab/lab/other/machines/s3/merged"])
    try:
        _started(other, "other/machines/s3/merged")
        m.pidfile.write_text(f"{other.pid}\n")
        assert machine.supervisor_pid(m) is None and machine.init_pid(m) is None
        machine.stop([m])
        assert other.poll() is None  # not killed
    finally:
        other.kill()
        other.wait()


def test_a_machine_that_never_boots_times_out_with_what_it_shows(tmp_path):
    d = tmp_path / "machines" / "s2"
    d.mkdir(parents=True)
    m = machine.Machine(Node("s2", "sf-x-s2", "spark"), d)
    # a supervisor (its command line names the machine's directory) whose nspawn never shows a systemd
    alive = subprocess.Popen(["sh", "-c", f"sleep 30; : {d}/merged"])
    try:
        _started(alive, f"{d}/merged")
        m.pidfile.write_text(f"{alive.pid}\n")
        m.log.write_text("Spawning container sf-x-s2\n")
        with pytest.raises(LabError, match=r"did not finish booting within 1 s .*its jobs could not be read"):
            boot.wait_booted(m, timeout=1)
    finally:
        alive.kill()
        alive.wait()


def test_a_boot_that_ended_degraded_without_logins_is_reported_at_once(tmp_path, monkeypatch):
    """systemd has no job left, a unit failed and /run/nologin is still there (what a cgroup race
    once did to systemd-user-sessions): no waiting for the bound; the failed unit's own journal
    lines are in the message."""
    d = tmp_path / "machines" / "s4"
    d.mkdir(parents=True)
    m = machine.Machine(Node("s4", "sf-x-s4", "spark"), d)
    m.log.write_text("[FAILED] Failed to start systemd-user-sessions.service\n")
    answers = {
        "sh": ("degraded\n", 1),
        "systemctl list-jobs": ("", 0),
        "systemctl --failed": ("systemd-user-sessions.service loaded failed failed Permit User Sessions\n", 0),
        "journalctl": ("systemd-user-sessions.service: Main process exited, code=exited, status=219/CGROUP\n", 0),
    }

    def run(_m, *command, timeout=60):
        key = next(k for k in answers if " ".join(command).startswith(k))
        out, rc = answers[key]
        return subprocess.CompletedProcess(list(command), rc, out, "")

    monkeypatch.setattr(machine, "supervisor_pid", lambda _m: 1)
    monkeypatch.setattr(machine, "run", run)
    t0 = time.monotonic()
    with pytest.raises(LabError, match=r"(?s)does not let users log in.*systemd-user-sessions.*status=219/CGROUP"):
        boot.wait_booted(m, timeout=60)
    assert time.monotonic() - t0 < 5


def test_a_machine_that_stopped_before_printing_anything_is_started_again(tmp_path, monkeypatch):
    """Its container never started (nothing on its console): started again, up to STARTS
    starts, then reported with how its supervisor ended (a signal, here); a machine that
    stopped with something to say is reported, not started again."""
    m = _stopped(tmp_path, "s4", "")
    started: list[int] = []
    waited: list[float] = []
    monkeypatch.setattr(boot.time, "sleep", waited.append)  # no real waits between starts here

    def again() -> int:
        p = subprocess.Popen(["sh", "-c", "kill -9 $$"])
        p.wait()
        monkeypatch.setitem(machine._started, m.dir, p)  # as machine.start keeps its supervisor
        m.pidfile.write_text(f"{p.pid}\n")
        started.append(p.pid)
        return p.pid

    with pytest.raises(
        boot.StoppedSilently,
        match=r"(?s)s4 stopped while it booted \(its supervisor was killed by signal 9\).*nothing",
    ):
        boot.boot(m, again)
    assert len(started) == boot.STARTS - 1
    assert waited == list(boot.RESTART_WAIT_S)  # each start again after a pause, longer each time
    # its systemd had begun when nspawn ended: started again too
    m.log.write_text(
        "systemd 252.39-1~deb12u2 running in system mode (+PAM)\nDetected virtualization systemd-nspawn.\n"
    )
    with pytest.raises(boot.StoppedSilently, match=r"(?s)stopped while it booted.*Detected virtualization"):
        boot.boot(m, again)
    assert len(started) == 2 * (boot.STARTS - 1)
    m.log.write_text("sh: mount: Device or resource busy\n")
    with pytest.raises(LabError, match="stopped while it booted") as caught:
        boot.boot(m, again)
    assert not isinstance(caught.value, boot.StoppedSilently)
    assert len(started) == 2 * (boot.STARTS - 1)
