"""The seam for the programs sparkfab runs here and the signals it acts on (`proc`)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from sparkfab import proc


def test_a_failing_program_raises_with_what_it_printed():
    assert proc.run(["sh", "-c", "echo out"]).stdout == "out\n"
    with pytest.raises(subprocess.CalledProcessError) as exc:
        proc.run(["sh", "-c", "echo why >&2; exit 3"])
    assert exc.value.returncode == 3 and exc.value.stderr == "why\n"
    assert proc.run(["sh", "-c", "exit 3"], check=False).returncode == 3


def test_a_signal_waits_for_the_block_then_acts_once():
    seen = []
    old = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with proc.signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            assert seen == []  # held while the block runs
        assert seen == [signal.SIGTERM]  # then acted on, once
        before = signal.getsignal(signal.SIGINT)
        with proc.signals_held() as got:
            os.kill(os.getpid(), signal.SIGINT)
        assert got == [signal.SIGINT] and signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGTERM, old)


def test_sigterm_is_raised_where_the_verb_is():
    handler = proc.on_sigterm()
    with pytest.raises(proc.Terminated):
        handler(signal.SIGTERM, None)
    assert issubclass(proc.Terminated, KeyboardInterrupt)  # the same clean-up as Ctrl-C
