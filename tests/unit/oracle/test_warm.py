"""The warm oracle server (`oracle.warm` and `oracle_cli.serve`) as a run of sparkfab meets it:
started by the first ask, answering later ones from the same process, one server however many
ask at once, gone when idle, and never an answer where it could not check."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkfab import paths
from sparkfab.oracle import warm
from tests.conftest import REPO

DOUBLE = REPO / "tests" / "doubles" / "engine_oracle.py"


@pytest.fixture
def sock(monkeypatch) -> Iterator[Path]:
    """A socket path short enough for a Unix socket, and every server started on it stopped."""
    d = Path(tempfile.mkdtemp(prefix="sf-warm-", dir="/tmp"))
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "30")
    path = d / "oracle.sock"
    yield path
    warm.stop(path)
    for f in d.iterdir():
        f.unlink()
    d.rmdir()


def _ask(path: Path, *argv: str, env: dict[str, str] | None = None) -> dict | None:
    request = {"launches": [{"argv": ["engine", *argv], "model_dir": None}]}
    return warm.ask(Path(sys.executable), DOUBLE, path, request, env or dict(os.environ), 30)


def _server_pid(path: Path) -> int:
    """The pid of the process listening at `path`, as the kernel says (SO_PEERCRED)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        pid, _uid, _gid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return pid


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a child of this process (the first ask started it) stays a zombie until reaped
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_the_first_ask_starts_a_server_and_the_next_is_answered_by_it(sock):
    first = _ask(sock, "--tp", "4")
    assert first is not None and first["version"] == "9.9.9"
    assert first["results"] == [{"ok": True, "error": "", "calls": 2}]  # its warm-up was call 1
    pid = _server_pid(sock)
    second = _ask(sock, "--refuse")
    assert second is not None and second["results"] == [{"ok": False, "error": "refused", "calls": 3}]
    assert _server_pid(sock) == pid
    assert warm.stop(sock) == pid
    assert _gone(pid, 10) and not sock.exists()


def test_many_first_asks_at_once_start_one_server(sock):
    answers: list[dict | None] = []
    threads = [threading.Thread(target=lambda: answers.append(_ask(sock, "--tp", "2"))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 6 and all(a is not None and a["results"][0]["ok"] for a in answers)
    # one process answered all six: its checker ran once per ask after its warm-up
    assert sorted(a["results"][0]["calls"] for a in answers if a) == [2, 3, 4, 5, 6, 7]


def test_an_idle_server_exits_and_takes_its_socket_with_it(sock, monkeypatch):
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "0.5")
    assert _ask(sock) is not None
    pid = _server_pid(sock)
    assert _gone(pid, 10)
    assert not sock.exists()
    assert _ask(sock) is not None  # the next ask starts another
    assert _server_pid(sock) != pid


def test_a_dead_servers_socket_is_replaced(sock):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file is left, nothing listens
    answer = _ask(sock)
    assert answer is not None and answer["results"][0]["ok"]


def test_an_engine_that_does_not_import_gives_no_answer(sock):
    env = {**os.environ, "ENGINE_ORACLE_IMPORT_FAILS": "1"}
    assert _ask(sock, env=env) is None  # the caller then runs the engine once, which says why
    assert "could not start: ImportError: libengine.so" in sock.with_suffix(".log").read_text()
    deadline = time.monotonic() + 10
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sock.exists()  # it answered that it failed, and exited


def test_sockets_live_only_in_a_directory_of_this_user_alone(monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="sf-", dir="/tmp"))  # a socket's path holds 108 bytes
    monkeypatch.setattr(paths, "TMP_ROOT", str(short))
    mine = short / f"sparkfab-{os.getuid()}"
    mine.mkdir(mode=0o777)
    mine.chmod(0o777)  # another user could listen here
    assert warm.socket_path("vllm", "k") is None
    mine.chmod(0o700)
    path = warm.socket_path("vllm", "k")
    assert path is not None and path.parent == mine
    assert warm.socket_path("vllm", "k") == path and warm.socket_path("vllm", "other") != path
    deep = short / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(paths, "TMP_ROOT", str(deep))
    assert warm.socket_path("vllm", "k") is None  # longer than a Unix socket's path may be
    shutil.rmtree(short)


def test_no_server_when_idle_is_zero(monkeypatch):
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "0")
    assert warm.idle_s() == 0
    monkeypatch.setenv("SPARKFAB_ORACLE_IDLE_S", "soon")
    assert warm.idle_s() == warm.DEFAULT_IDLE_S
