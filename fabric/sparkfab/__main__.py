"""The `sparkfab` command (`python -m sparkfab` and the installed script): SIGTERM is
sparkfab's before its modules load, so a signal that arrives during start-up ends it as one
that arrives later does, with a line and 143 (Ctrl-C: 130), not a traceback."""

from __future__ import annotations

import signal
import sys

from sparkfab.errors import Exit
from sparkfab.proc import Terminated, interruption, on_sigterm


def run() -> int:
    signal.signal(signal.SIGTERM, on_sigterm())
    try:
        from sparkfab.cli import main

        return main()
    except (KeyboardInterrupt, Exception) as exc:  # before main's own handlers are in place (imports, set-up)
        signalled = interruption(exc)
        if signalled is None:
            raise
        ended = isinstance(signalled, Terminated)
        sys.stderr.write("sparkfab: terminated\n" if ended else "sparkfab: interrupted\n")
        return Exit.TERMINATED if ended else Exit.INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(run())
