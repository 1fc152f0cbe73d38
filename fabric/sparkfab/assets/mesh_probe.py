"""Reach every destination the way applications connect, from the host it runs on: a ping and
TCP connects with no `-I` and no bound source (the kernel picks route and source), each with the
source it picked and the route `ip route get` gives. A refused connect means the RST came back,
so the return path works. Run by `verify` on each source rank (`verify/mesh.py`) with the host's
own python3 and its standard library only.

Its one argument is JSON: a list of [destination address, [ports], seconds to wait].
Output: one JSON list, per destination {"dst", "ping": bool, "route": `ip -j route get`'s first
entry (or {"error"}), "tcp": [{"port", "source", "result"}]}.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def route(dst: str) -> dict[str, Any]:
    r = subprocess.run(["ip", "-j", "route", "get", dst], capture_output=True, text=True)
    try:
        first: dict[str, Any] = json.loads(r.stdout)[0]
    except (ValueError, IndexError):
        return {"error": r.stderr.strip()}
    return first


def tcp(dst: str, port: int, wait: float) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        rc = s.connect_ex((dst, port))
        src = s.getsockname()[0]
        if rc not in (0, errno.EINPROGRESS):
            return {"port": port, "source": src, "result": os.strerror(rc)}
        _, ready, _ = select.select([], [s], [], wait)
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if ready else None
        if err is None:
            res = "timeout"
        elif err == 0:
            res = "connected"
        else:
            res = "refused" if err == errno.ECONNREFUSED else os.strerror(err)
        return {"port": port, "source": src, "result": res}
    finally:
        s.close()


def one(target: list[Any]) -> dict[str, Any]:
    dst, ports, wait = target
    ping = subprocess.run(["ping", "-c", "1", "-W", str(int(wait)), dst], capture_output=True)
    return {"dst": dst, "ping": ping.returncode == 0, "route": route(dst), "tcp": [tcp(dst, p, wait) for p in ports]}


def main(argv: list[str]) -> None:
    with ThreadPoolExecutor(16) as pool:
        print(json.dumps(list(pool.map(one, json.loads(argv[1])))))


if __name__ == "__main__":
    main(sys.argv)
