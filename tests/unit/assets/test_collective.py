"""The lab's collective engine ends on SIGTERM, whichever of its threads the kernel hands the
signal to: a reboot's last SIGTERM otherwise left it running until systemd's 90 s SIGKILL."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ASSET = Path(__file__).resolve().parents[3] / "fabric/sparkfab/assets/collective.py"
SYS_TGKILL = 234  # x86-64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serving(p: subprocess.Popen, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, p.stderr.read() if p.stderr else ""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail("the collective did not start serving")


@pytest.mark.slow  # torch's import alone takes seconds: the default tier stays under two minutes
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="tgkill's number is x86-64's")
def test_sigterm_handed_to_one_of_its_other_threads_ends_the_engine():
    http, store = _free_port(), _free_port()
    argv = [sys.executable, str(ASSET), "serve", "--world-size", "1", "--rank", "0", "--sizes", "1K", "--iters", "1"]
    argv += ["--master-addr", "127.0.0.1", "--master-port", str(store), "--http-host", "127.0.0.1"]
    argv += ["--http-port", str(http)]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _serving(p, http)
        tids = sorted(int(t) for t in os.listdir(f"/proc/{p.pid}/task"))
        target = next(t for t in tids if t != p.pid)  # gloo's, the HTTP server's
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(SYS_TGKILL, p.pid, target, signal.SIGTERM) == 0
        assert p.wait(timeout=15) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _json_line(argv: list[str]) -> dict:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[0])


@pytest.mark.slow  # torch's import
def test_run_sweeps_its_default_sizes_and_serve_only_the_sizes_it_is_given():
    """`run` (verify --collective) sweeps; `serve` (the engine's stand-in) is healthy after its
    check, and its /result carries a sweep only where --sizes asked for one."""
    base = ["--world-size", "1", "--rank", "0", "--master-addr", "127.0.0.1", "--iters", "1"]
    ran = _json_line([sys.executable, str(ASSET), "run", *base, "--master-port", str(_free_port())])
    assert [r["bytes"] for r in ran["sweep"]] == [4 << 10, 64 << 10, 1 << 20, 8 << 20, 32 << 20]
    for sizes, want in (([], []), (["--sizes", "4K"], [4 << 10])):
        http = _free_port()
        argv = [sys.executable, str(ASSET), "serve", *base, *sizes, "--master-port", str(_free_port())]
        argv += ["--http-host", "127.0.0.1", "--http-port", str(http)]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _serving(p, http)
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/result", timeout=10) as r:
                result = json.loads(r.read())
            assert result["all_ranks_ok"] and [r["bytes"] for r in result["sweep"]] == want
        finally:
            p.terminate()
            p.wait(timeout=15)
