"""One writer at a time: the lock every verb that changes hosts or a cluster's recorded state
takes (`apply`, `linkspeed`, `serve`, `reset`), and a bench takes on its run directory.

It is an advisory `flock` on `<state>/lock`, so the kernel releases it however the holder ends
(exit, an exception, Ctrl-C, SIGKILL): a lock cannot go stale. While held, the file says who
holds it (pid, verb, command line, since when), which is what a second verb prints when it is
refused at once instead of waiting and interleaving its files with the first one's.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def held(folder: Path, what: str, verb: str, name: str = "lock") -> Iterator[None]:
    """Hold `folder`'s lock (the file `name` in it) for the block, or raise `Busy` naming the
    holder; `what` is how the message calls the folder ("cluster ring4")."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    f = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held open for the block)
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = _holder_text(f.read())
            raise Busy(
                f"{what} is busy: {holder} holds {path}; wait until it ends "
                "(the lock goes with its process, also when it is killed)"
            ) from None
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
