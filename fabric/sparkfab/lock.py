"""One writer at a time: the lock every verb that changes hosts or a cluster's recorded state
takes (`apply`, `linkspeed`, `serve`, `reset`), and a bench takes on its run directory.

It is an advisory `flock` on `<state>/lock`, so the kernel releases it however the holder ends
(exit, an exception, Ctrl-C, SIGKILL): a lock cannot go stale. While held, the file says who
holds it (pid, verb, command line, since when), which is what a second verb prints when it is
refused at once instead of waiting and interleaving its files with the first one's.
`lab down` does not wait its turn: it ends the verb that holds its lab (`taken_over`).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from sparkfab import proc
from sparkfab.errors import Unavailable


class Busy(Unavailable):
    """Another sparkfab holds the cluster (or the run directory)."""


def _holder_text(raw: str) -> str:
    try:
        who = json.loads(raw)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(who["since"])))
        return f"`{who['verb']}` (pid {who['pid']}, since {since}: {who['argv']})"
    except (ValueError, KeyError, TypeError):
        return "another sparkfab (it has not said who yet)"


def _take(path: Path) -> IO[str] | None:
    """`path` opened and flocked, or None while another process holds it."""
    f = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held open by the caller)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


def _holder(path: Path) -> dict[str, Any] | None:
    try:
        who = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return who if isinstance(who, dict) else None


@contextmanager
def _holding(f: IO[str], verb: str) -> Iterator[None]:
    """Say who holds the taken lock `f` for the block, then release it."""
    try:
        f.seek(0)
        f.truncate()
        argv = " ".join(["sparkfab", *sys.argv[1:]])[:300]
        f.write(json.dumps({"pid": os.getpid(), "verb": verb, "argv": argv, "since": time.time()}))
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            f.flush()
            fcntl.flock(f, fcntl.LOCK_UN)
    finally:
        f.close()


@contextmanager
def held(folder: Path, what: str, verb: str, name: str = "lock") -> Iterator[None]:
    """Hold `folder`'s lock (the file `name` in it) for the block, or raise `Busy` naming the
    holder; `what` is how the message calls the folder ("cluster ring4")."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    f = _take(path)
    if f is None:
        raise Busy(
            f"{what} is busy: {_holder_text(path.read_text(encoding='utf-8'))} holds {path}; wait until it "
            "ends (the lock goes with its process, also when it is killed)"
        )
    with _holding(f, verb):
        yield


@contextmanager
def taken_over(
    folder: Path, what: str, verb: str, say: Callable[[str], None], grace_s: float = 30.0, name: str = "lock"
) -> Iterator[None]:
    """Hold `folder`'s lock for the block, ending the sparkfab verb that holds it first (for
    `lab down`: a verb left running against a lab that is gone would only fail later, its
    Ansible workers blocked on hosts that no longer exist). The holder gets SIGTERM, which ends
    its Ansible run and releases the lock; `say` is told whom it ends. A holder that is not a
    sparkfab process, or that has not let go after `grace_s`, leaves `Busy`."""
    path = folder / name
    deadline = time.monotonic() + grace_s
    asked: int | None = None
    while (f := _take(path)) is None:
        who = _holder(path) or {}
        pid = who.get("pid")
        if asked is None and isinstance(pid, int) and pid > 1 and _is_sparkfab(pid):
            say(f"{what}: ending {_holder_text(json.dumps(who))}, which runs against it")
            proc.send(pid, signal.SIGTERM)
            asked = pid
        if asked is None or time.monotonic() > deadline:
            raise Busy(f"{what} is busy: {_holder_text(json.dumps(who))} holds {path} and did not let go")
        time.sleep(0.2)
    with _holding(f, verb):
        yield


def _is_sparkfab(pid: int) -> bool:
    """Whether `pid` runs sparkfab (the pid a lock file names could have been reused)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"sparkfab" in a for a in argv[:3])
