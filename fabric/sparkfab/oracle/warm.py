"""A server that keeps one engine imported between validates (`assets/oracle_cli.py`'s `serve`,
run in the engine's Python). Importing vLLM is most of a validate that asks it (torch alone
takes seconds); a server started by the first ask answers every later one without it.

It listens on a Unix socket in its user's private directory (`paths.private_tmp`, where ssh's
multiplexed sockets go too), named by what its answers depend on, and exits after
`SPARKFAB_ORACLE_IDLE_S` seconds without a request (600; 0: no server, every ask starts the
engine once). Its log is beside its socket. Where no server can answer (no private directory, a
path too long for a socket, an engine that fails to import), `ask` says None and the caller runs
the engine's checks once, which say why in the engine's words.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from sparkfab import paths

#: how long a started server may take to listen (it listens before it imports the engine)
LISTEN_S = 30
DEFAULT_IDLE_S = 600.0


def idle_s() -> float:
    """How long a server waits for the next ask (`SPARKFAB_ORACLE_IDLE_S`); 0: no server."""
    try:
        return max(0.0, float(os.environ.get("SPARKFAB_ORACLE_IDLE_S", DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def socket_path(engine: str, key: str) -> Path | None:
    """The socket of the server for `engine` and `key` (what its answers depend on)."""
    d = paths.private_tmp()
    if d is None:
        return None
    path = d / f"oracle-{engine}-{hashlib.sha256(key.encode()).hexdigest()[:20]}.sock"
    return path if len(str(path)) < 100 else None  # a Unix socket's path holds 108 bytes at most


def exchange(path: Path, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """One request to the server at `path` and its answer; None where nothing listens there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        s.sendall(json.dumps(request).encode() + b"\n")
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    answer = json.loads(buf or b"{}")
    return answer if isinstance(answer, dict) else {}


def ask(
    py: Path, oracle: Path, path: Path, request: dict[str, Any], env: dict[str, str], timeout: float
) -> dict[str, Any] | None:
    """The answer of the server at `path`, started with `py oracle serve` where none listens;
    None where no server answered (its log says why)."""
    try:
        answer = exchange(path, request, timeout)
        if answer is None:
            with open(path.with_suffix(".log"), "ab") as log:
                server = subprocess.Popen(
                    [str(py), str(oracle), "serve", "--socket", str(path), "--idle", str(idle_s())],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=env,
                    cwd="/",  # it holds no directory of this run's (a mount to unmount, a folder to remove)
                    start_new_session=True,  # it outlives this run, and this run's Ctrl-C
                )
            deadline = time.monotonic() + LISTEN_S
            while answer is None and time.monotonic() < deadline:
                time.sleep(0.02)
                answer = exchange(path, request, timeout)
                if answer is None and server.poll() is not None:
                    # it found another starter's server (the path's lock): that one binds soon
                    deadline = min(deadline, time.monotonic() + 2)
    except (OSError, ValueError):
        return None
    if not answer or "results" not in answer or "version" not in answer:
        return None
    return answer


def stop(path: Path) -> int | None:
    """Stop the server at `path`: its pid, or None where none listens."""
    try:
        answer = exchange(path, {"stop": True}, 30)
    except (OSError, ValueError):
        return None
    return int(answer["stopped"]) if answer and "stopped" in answer else None
