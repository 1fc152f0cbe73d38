"""The seam for the programs sparkfab runs on this machine (ssh-keygen, ip, daemons): every argv
is logged, and a failing one (with `check`) raises CalledProcessError with what it printed; and
the process trees it ends (a lab machine's, an interrupted ansible-playbook's); and the signals
this process acts on (SIGTERM raised as `Terminated` where the verb is, Ctrl-C and SIGTERM held
or deferred over what must not stop half-way)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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


class Terminated(KeyboardInterrupt):
    """SIGTERM (timeout, systemd, a CI runner), raised where the verb is, as Ctrl-C is, so that
    the same clean-up runs: half-written outputs removed, locks released; exit 143."""


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or during, nearest first (each once)."""
    seen: list[BaseException] = []
    at: BaseException | None = exc
    while at is not None and all(at is not e for e in seen):
        seen.append(at)
        at = at.__cause__ or at.__context__
    return seen


def interruption(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind `exc`, where a signal caused it: Python wraps an exception
    raised in some places in one of its own (a class body's `__set_name__` in a RuntimeError,
    which is where a SIGTERM during an import met the clean-clone run), and an Ansible run ended
    by a signal says so by its cause. None for an error no signal caused."""
    raised = _chain(exc)
    found = [e for e in raised if isinstance(e, KeyboardInterrupt)]
    return next((e for e in found if isinstance(e, Terminated)), found[0] if found else None)


def on_sigterm() -> Callable[[int, object], None]:
    """A SIGTERM handler for this process that raises Terminated. A process forked from it
    without exec (pyroute2's namespace helpers, multiprocessing) inherits the handler but not
    the verb: there SIGTERM ends the process, as it would have without sparkfab's handler."""
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    return handler


@contextlib.contextmanager
def signals_held() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM are recorded in the yielded list instead of acted on while the block
    runs, and the handlers installed before come back after it (main thread only: elsewhere
    Python runs no handler and the list stays empty)."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    old = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done (a few renames that must not stop
    half-way), then act as they would have: the handler that was installed runs once."""
    with signals_held() as got:
        yield
    if got:
        signum = signal.Signals(got[0])
        handler = signal.getsignal(signum)
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)
