"""Ctrl-C and SIGTERM during a real ansible-playbook run on localhost: the whole run ends (the
task's process too, no orphan), the verb gets what each host had done so far and ends as
interrupted or terminated, and sparkfab's own signal handlers are back afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from sparkfab import proc
from sparkfab.proc import Terminated
from sparkfab.push.run import Interrupted, run_playbook
from tests.conftest import REPO
from tests.helpers.inventories import localhost


@pytest.fixture
def state():
    """A run's state folder with a short path, as a cluster's is (/var/lib/sparkfab/CLUSTER): the
    run's TMPDIR is in it, where Mitogen's unix sockets must fit in 108 bytes (a test's tmp_path
    under pytest-xdist does not always leave room)."""
    folder = Path(tempfile.mkdtemp(prefix="sparkfab-run-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _until_written(pidfile: Path) -> None:
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)


def _until_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while proc.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not proc.alive(pid)


def _started(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot; None once it is gone): tells a process from a
    later one that was given its pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _left(snapshot: list[tuple[int, str | None]], seconds: float = 10) -> list[str]:
    """The processes of `snapshot` (pid, start) still running after `seconds` (a process killed a
    moment ago may still be on its way out), with their command lines."""
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid, start in snapshot if start and _started(pid) == start and proc.alive(pid)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    out = []
    for pid in left:
        try:
            out.append(f"{pid} {Path(f'/proc/{pid}/cmdline').read_bytes().replace(bytes(1), b' ').decode()[:200]}")
        except OSError:
            pass
    return out


def _freeze(root: int, spare: int, stopped: list[int]) -> None:
    """Stop `root` and all below it but `spare` with SIGSTOP (each added to `stopped`), reading the
    tree again until no new one appears: a stopped process forks no more, but one forked while
    the tree was read (a worker, a Mitogen child) would run on, see its parent die and end what it
    supervises."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        new = [pid for pid in (root, *proc.descendants(root)) if pid != spare and pid not in stopped]
        if not new and all(proc.stopped(pid) for pid in stopped):
            return
        for pid in new:
            proc.send(pid, signal.SIGSTOP)
        stopped += new
        time.sleep(0.05)
    raise AssertionError(f"the run's processes did not all stop: {stopped}")


def _verb_in_a_process(tmp_path: Path, state: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A verb's run of the sleeping probe in a process of its own (as sparkfab is one), with the
    file its task writes its pid to; the run's state in `state`."""
    pidfile = tmp_path / "task.pid"
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from sparkfab.push.run import run_playbook; "
        "run_playbook(sys.argv[2], Path(sys.argv[3]), 'probe', extravars={'probe_pid': sys.argv[4]}, "
        "hosts=['local'], workdir=Path(sys.argv[5]))"
    )
    playbook = str(REPO / "tests/data/playbooks/sleep-probe.yml")
    args = [str(REPO / "fabric"), playbook, str(localhost(tmp_path)), str(pidfile), str(state)]
    return subprocess.Popen([sys.executable, "-c", code, *args]), pidfile


@pytest.mark.parametrize(
    "signum,ends_as",
    [(signal.SIGTERM, Terminated), pytest.param(signal.SIGINT, KeyboardInterrupt, marks=pytest.mark.slow)],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_signal_ends_the_run_and_its_task_and_hands_back_the_table(tmp_path, state, signum, ends_as):
    inventory = localhost(tmp_path)
    pidfile = tmp_path / "task.pid"

    def signal_once_the_task_runs() -> None:
        _until_written(pidfile)
        os.kill(os.getpid(), signum)

    before = signal.getsignal(signum)
    threading.Thread(target=signal_once_the_task_runs, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted) as caught:
        run_playbook(
            str(REPO / "tests/data/playbooks/sleep-probe.yml"),
            inventory,
            "probe",
            extravars={"probe_pid": str(pidfile)},
            hosts=["local"],
            workdir=state,
        )
    assert time.monotonic() - t0 < 60  # not the task's 120 s
    assert type(caught.value.__cause__) is ends_as
    assert "local" in caught.value.result.hosts
    task = int(pidfile.read_text())
    assert _until_gone(task), f"the task's process {task} outlived the run"
    assert signal.getsignal(signum) == before


def test_ansible_playbook_dies_with_a_sparkfab_killed_by_sigkill(tmp_path, state):
    """SIGKILL reaches no handler: the kernel tells the tethered wrapper, which ends
    ansible-playbook and everything below it, the workers that started sessions of their own
    and the task they run included, so no play goes on alone and nothing is left."""
    verb, pidfile = _verb_in_a_process(tmp_path, state)
    tree: list[int] = []
    try:
        _until_written(pidfile)
        tree = proc.descendants(verb.pid)
        snapshot = [(pid, _started(pid)) for pid in tree]
        playbook = [
            p for p in proc.children(verb.pid) if b"ansible-playbook" in Path(f"/proc/{p}/cmdline").read_bytes()
        ]
        assert len(playbook) == 1, tree
        task = int(pidfile.read_text())
        verb.kill()
        verb.wait()
        assert _until_gone(playbook[0]), "ansible-playbook outlived the sparkfab that started it"
        assert _until_gone(task), f"the task's process {task} outlived the sparkfab that started it"
        left = _left(snapshot)
        assert not left, f"left behind: {left}"
    finally:
        if verb.poll() is None:
            verb.kill()
        for pid in tree:
            proc.send(pid, signal.SIGKILL)


@pytest.mark.slow  # a real run of 8 s and more: the default tier stays under two minutes
def test_a_run_past_its_bound_ends_with_each_hosts_step_named(tmp_path, state):
    """--timeout bounds the whole run: the task's process goes with it, and the error names the
    step each host was at."""
    from sparkfab.errors import DeployError

    inventory = localhost(tmp_path)
    pidfile = tmp_path / "task.pid"
    t0 = time.monotonic()
    ended = r"sleep-probe.yml did not finish within 8 s.*\n  local: at 'Probe \| Write"
    with pytest.raises(DeployError, match=ended):
        run_playbook(
            str(REPO / "tests/data/playbooks/sleep-probe.yml"),
            inventory,
            "probe",
            extravars={"probe_pid": str(pidfile)},
            timeout=8,
            hosts=["local"],
            workdir=state,
        )
    assert time.monotonic() - t0 < 60  # not the task's 120 s
    task = int(pidfile.read_text())
    assert _until_gone(task), f"the task's process {task} outlived the run"


@pytest.mark.slow  # a real run: the default tier stays under two minutes
def test_what_a_controller_crash_left_is_ended_by_the_next_run(tmp_path, state):
    """sparkfab, the tether and ansible-playbook killed at once (a controller crash): the task a
    worker started lives on, orphaned, where no tether can see it. The next run in the same
    state directory finds it by the mark every process of a run carries, and ends it first."""
    from sparkfab.push.env import strategy_env
    from sparkfab.push.processes import end_leftovers, scratch

    verb, pidfile = _verb_in_a_process(tmp_path, state)
    tree: list[int] = []
    try:
        _until_written(pidfile)
        task = int(pidfile.read_text())
        # stopped first, all of them, then killed: killed one by one, the tether would see
        # sparkfab die and end the task before its own SIGKILL came (the tether working)
        _freeze(verb.pid, task, tree)
        for pid in tree:
            proc.send(pid, signal.SIGKILL)
        verb.wait()
        time.sleep(0.5)
        assert proc.alive(task), "the crash took the task along: nothing is left to find"
        # Mitogen's listener, which no process removed, is in the run's own TMPDIR, not in /tmp
        left = sorted((state / "tmp").glob("mitogen_unix_*.sock"))
        assert left or not strategy_env(dict(os.environ)), "the run's sockets are not in its own folder"
        ended = end_leftovers(state / "runner")
        assert task in ended and _until_gone(task)
        assert end_leftovers(state / "runner") == []
        # the next run empties that folder before it starts
        assert scratch(state) == state / "tmp"
        assert list((state / "tmp").iterdir()) == []
    finally:
        if verb.poll() is None:
            verb.kill()
        for pid in tree:
            proc.send(pid, signal.SIGKILL)


def test_the_runs_own_tmpdir_is_emptied_and_never_too_long_for_a_socket(tmp_path):
    """A run's TMPDIR is its state's tmp/, emptied before the run; where a Mitogen socket in it
    would pass the 108 bytes of a unix socket's path, the run keeps the system's."""
    from sparkfab.push.processes import scratch

    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "mitogen_unix_left.sock").write_text("")
    assert scratch(tmp_path) == tmp_path / "tmp" and list((tmp_path / "tmp").iterdir()) == []
    assert (tmp_path / "tmp").stat().st_mode & 0o777 == 0o700
    deep = tmp_path / ("d" * (100 - len(str(tmp_path))))
    assert scratch(deep) is None and not deep.exists()
