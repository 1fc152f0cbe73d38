"""The seam for the programs sparkfab runs on this machine (ssh-keygen, ip, daemons): every argv
is logged, and a failing one (with `check`) raises CalledProcessError with what it printed; and
the process trees it ends (a lab machine's, an interrupted ansible-playbook's)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger("sparkfab.proc")


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    timeout: float | None = 60,
    input_text: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    log.debug("run: %s", " ".join(argv))
    res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, input=input_text, env=env)
    if check and res.returncode != 0:
        raise subprocess.CalledProcessError(res.returncode, list(argv), res.stdout, res.stderr)
    return res


def spawn(argv: Sequence[str], log_path: str) -> subprocess.Popen[bytes]:
    """Start a long-running process in its own session; its pid is the caller's to end."""
    log.debug("spawn: %s", " ".join(argv))
    out = open(log_path, "ab")  # noqa: SIM115 (handed to the child)
    try:
        return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    finally:
        out.close()


def children(pid: int) -> list[int]:
    """The processes `pid` started (any of its threads), as the kernel lists them; [] once gone."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def descendants(pid: int, depth: int | None = None) -> list[int]:
    """Children, their children and so on (`depth` levels; all when None), parents first."""
    out: list[int] = []
    for k in children(pid):
        out.append(k)
        if depth is None or depth > 1:
            out += descendants(k, None if depth is None else depth - 1)
    return out


def kill_tree(pid: int) -> list[int]:
    """SIGKILL `pid` and every process below it, whatever session or process group they put
    themselves in: the tree is stopped first (no process forks while it is collected), then
    killed; the pids it ended."""
    tree: list[int] = []
    pending = [pid]
    while pending:  # stop each process before reading its children: none is born after
        p = pending.pop()
        if p in tree or not send(p, signal.SIGSTOP):
            continue
        tree.append(p)
        _until_stopped(p)
        pending += children(p)
    for p in tree:
        send(p, signal.SIGKILL)
    return tree


def stopped(pid: int) -> bool:
    """Whether `pid` has stopped or ended. SIGSTOP is only pending until the process is next
    scheduled: until then it may still fork, and a signal with a lower number pending with it (a
    tether's SIGTERM) is handled first."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "TtZX"
    except (OSError, IndexError):
        return True


def _until_stopped(pid: int, seconds: float = 0.5) -> None:
    deadline = time.monotonic() + seconds
    while not stopped(pid) and time.monotonic() < deadline:
        time.sleep(0.001)


def send(pid: int, sig: int) -> bool:
    """`sig` to `pid`; False when there is no such process (any more)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def alive(pid: int) -> bool:
    """Whether `pid` runs: it exists and is not a zombie waiting for its parent."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
