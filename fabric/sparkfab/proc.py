"""The seam for the programs the lab runs on this machine (ssh-keygen, ip, daemons): every argv
is logged, and a failing one (with `check`) raises CalledProcessError with what it printed."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence

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
