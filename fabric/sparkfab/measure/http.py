"""A minimal HTTP/1.1 client for timing streamed responses (SSE over chunked encoding).

General clients add milliseconds between a byte's arrival and the caller seeing it; this one
writes the request in one send with TCP_NODELAY and stamps each `data:` line with
CLOCK_MONOTONIC as soon as its bytes are read.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit


class HttpError(Exception):
    pass


#: Idle keep-alive connections per event loop and host: (reader, writer).
_POOL: dict[tuple[int, str, int], list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}


async def _connect(host: str, port: int, timeout_s: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    idle = _POOL.setdefault((id(asyncio.get_running_loop()), host, port), [])
    while idle:
        reader, writer = idle.pop()
        if not reader.at_eof() and not writer.is_closing():
            return reader, writer
        writer.close()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return reader, writer


async def sse_post(url: str, body: dict[str, Any], timeout_s: float) -> AsyncIterator[tuple[int, str]]:
    """POST JSON; yield (monotonic ns, payload) for each SSE `data:` line of the response."""
    u = urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    payload = json.dumps(body).encode()
    head = (
        f"POST {u.path or '/'} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(payload)}\r\n\r\n"
    ).encode()
    reader, writer = await _connect(host, port, timeout_s)
    writer.write(head + payload)
    reusable = False
    try:
        status, headers = await _head(reader, timeout_s)
        if status != 200:
            raise HttpError(f"HTTP {status}: {(await reader.read(300)).decode(errors='replace')}")
        chunked = "chunked" in headers.get("transfer-encoding", "")
        chunks = _chunked(reader, timeout_s) if chunked else _plain(reader, timeout_s)
        buf = b""
        async for part in chunks:
            now = time.monotonic_ns()
            buf += part
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", errors="replace").rstrip("\r")
                if text.startswith("data:"):
                    yield now, text[5:].strip()
        reusable = chunked and headers.get("connection", "").lower() != "close"
    finally:
        if reusable:
            _POOL[(id(asyncio.get_running_loop()), host, port)].append((reader, writer))
        else:
            writer.close()


async def _head(reader: asyncio.StreamReader, timeout_s: float) -> tuple[int, dict[str, str]]:
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout_s)
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
    return status, headers


async def _chunked(reader: asyncio.StreamReader, timeout_s: float) -> AsyncIterator[bytes]:
    while True:
        size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout_s)
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout_s)  # the empty trailer
            return
        data = await asyncio.wait_for(reader.readexactly(size + 2), timeout_s)
        yield data[:-2]


async def _plain(reader: asyncio.StreamReader, timeout_s: float) -> AsyncIterator[bytes]:
    while True:
        data = await asyncio.wait_for(reader.read(65536), timeout_s)
        if not data:
            return
        yield data
