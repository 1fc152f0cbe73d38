"""One operator at a time: a verb that changes a cluster is refused at once while another holds
it, is told who, and the lock goes with its holder however that ends (SIGKILL included)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time

import pytest

from sparkfab import lock
from tests.conftest import REPO

HOLDER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {fabric!r})
from sparkfab import lock
with lock.held(Path(sys.argv[1]), "cluster ring4", sys.argv[2]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding the cluster's lock (as `linkspeed` would), ended by the test."""
    procs = []

    def start(state, verb="linkspeed"):
        code = HOLDER.format(fabric=str(REPO / "fabric"))
        p = subprocess.Popen([sys.executable, "-c", code, str(state), verb], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_a_second_holder_is_refused_naming_the_first(tmp_path, holder):
    first = holder(tmp_path)
    with pytest.raises(lock.Busy) as err, lock.held(tmp_path, "cluster ring4", "apply"):
        pass
    text = str(err.value)
    assert "cluster ring4 is busy: `linkspeed` (pid" in text and f"pid {first.pid}," in text
    assert str(tmp_path / "lock") in text
    assert err.value.exit_code == 5


def test_the_lock_goes_with_a_killed_holder(tmp_path, holder):
    first = holder(tmp_path)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    with lock.held(tmp_path, "cluster ring4", "apply"):
        assert '"verb": "apply"' in (tmp_path / "lock").read_text()
    assert (tmp_path / "lock").read_text() == ""  # released: says no holder


def test_released_on_an_exception_and_taken_again(tmp_path):
    with pytest.raises(RuntimeError), lock.held(tmp_path, "cluster ring4", "serve start"):
        raise RuntimeError("a failed play")
    with lock.held(tmp_path, "cluster ring4", "serve stop"):
        pass


@pytest.mark.parametrize(
    "argv",
    [
        ("apply", "INV", "-y"),
        ("linkspeed", "INV", "100e", "-y"),
        ("serve", "start", "INV", "-y"),
        ("reset", "INV", "-y"),
    ],
)
def test_every_verb_that_changes_hosts_takes_it(tmp_path, holder, monkeypatch, cli, argv):
    """The verbs refuse before they render, record or reach a host (the inventory's hosts are
    not reachable from here: a verb that did not wait for the lock would fail otherwise)."""
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path))
    holder(tmp_path / "ring4")
    inv = str(REPO / "inventory/ring4.yml")
    t0 = time.monotonic()
    res = cli(*[inv if a == "INV" else a for a in argv])
    assert res.code == 5, res.err
    assert "cluster ring4 is busy: `linkspeed`" in res.err
    assert not (tmp_path / "ring4/tree").exists()
    assert time.monotonic() - t0 < 30  # refused, not waited for


def test_lab_down_ends_the_verb_that_holds_its_lab(tmp_path, holder):
    """`lab down` does not queue behind an apply that runs against the lab it removes: the
    holder (a sparkfab process, by its command line) gets SIGTERM, is named, and the lock is
    taken once it has let go."""
    first = holder(tmp_path, "apply")
    said: list[str] = []
    with lock.taken_over(tmp_path, "lab ring4", "lab down", said.append):
        assert first.poll() == -signal.SIGTERM
        assert "lab down" in (tmp_path / "lock").read_text()
    assert len(said) == 1 and said[0].startswith(f"lab ring4: ending `apply` (pid {first.pid},"), said


def test_a_holder_of_another_kind_is_left_alone(tmp_path):
    """Whatever holds the file and is not sparkfab (the pid a lock names could be reused, or a
    person's `flock`) is not signalled: the take-over is refused as busy."""
    path = tmp_path / "lock"
    other = subprocess.Popen(["flock", str(path), "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while _free(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        busy = pytest.raises(lock.Busy, match="did not let go")
        with busy, lock.taken_over(tmp_path, "lab ring4", "lab down", print):
            pass
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def _free(path) -> bool:
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True
