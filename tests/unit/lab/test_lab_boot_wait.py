"""Waiting for a lab Spark's boot, without root: a machine whose supervisor has ended is
reported at once with the end of its console, not after the whole boot timeout."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from sparkfab.errors import LabError
from sparkfab.lab import machine
from sparkfab.lab.spec import Node


def test_a_machine_that_stopped_is_reported_at_once_with_its_console(tmp_path):
    d = tmp_path / "machines" / "s1"
    d.mkdir(parents=True)
    m = machine.Machine(Node("s1", "sf-x-s1", "spark"), d)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    m.pidfile.write_text(f"{gone.pid}\n")
    m.log.write_text("\x1b[0;1;31mFAILED\x1b[0m Failed to mount overlay\nsh: mount: Device or resource busy\n")
    t0 = time.monotonic()
    with pytest.raises(LabError, match=r"s1 stopped while it booted.*\n  FAILED Failed to mount overlay\n  sh: mount"):
        machine.wait_booted(m, timeout=60)
    assert time.monotonic() - t0 < 5


def test_a_machine_that_never_boots_times_out_with_what_it_shows(tmp_path):
    d = tmp_path / "machines" / "s2"
    d.mkdir(parents=True)
    m = machine.Machine(Node("s2", "sf-x-s2", "spark"), d)
    alive = subprocess.Popen(["sleep", "30"])  # a supervisor whose nspawn never shows a systemd
    try:
        m.pidfile.write_text(f"{alive.pid}\n")
        m.log.write_text("Spawning container sf-x-s2\n")
        with pytest.raises(LabError, match=r"did not finish booting within 1 s .*its jobs could not be read"):
            machine.wait_booted(m, timeout=1)
    finally:
        alive.kill()
        alive.wait()
