"""A real OpenAI-compatible server for tests: started as a process, waited for on /health,
stopped by its pid (and only that one)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(
    cmd: list[str], env: dict[str, str], log_path: Path, url: str, wait_s: float, what: str, **popen: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `cmd` until the block ends; fail the test with the log's tail if /health never answers."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, **popen)
        try:
            _wait(
                proc, url, time.monotonic() + wait_s, lambda: f"{what} did not come up:\n{log_path.read_text()[-3000:]}"
            )
            yield proc
        finally:
            ended(proc, 30)


def ended(proc: subprocess.Popen[Any], timeout: float) -> None:
    """End a process a test started: SIGTERM, and SIGKILL when it has not gone within `timeout`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait(proc: subprocess.Popen[bytes], url: str, deadline: float, why: Callable[[], str]) -> None:
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(why())
        time.sleep(0.3)


@contextlib.contextmanager
def odd_server(path: str, status: int, body: bytes) -> Iterator[str]:
    """The protocol double in this process, with `path` answering `status` and `body` as given."""
    from tests.doubles.openai_server import FakeServer

    srv = FakeServer(model="m", odd=(path, status, body))
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()
