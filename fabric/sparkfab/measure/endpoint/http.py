"""A minimal HTTP/1.1 client for timing streamed responses (SSE over chunked encoding).

General clients add milliseconds between a byte's arrival and the caller seeing it. This one
serializes the body before it stamps the send, writes the request in one send with TCP_NODELAY,
and stamps every block of bytes with CLOCK_MONOTONIC in the protocol's `data_received`, the
first Python code that runs after the event loop learns of them; parsing happens afterwards and
each `data:` line carries the stamp of the block that completed it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from sparkfab.measure.endpoint.access import Access


class HttpError(Exception):
    pass


def decode(body: str | bytes | httpx.Response) -> Any:
    """JSON from a server (an answer, an SSE chunk): nesting too deep for Python's parser is a
    ValueError like any other body that is not JSON, which every caller already handles."""
    try:
        return json.loads(body.content if isinstance(body, httpx.Response) else body)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


MAX_LINE = 1 << 20  # a status line, header block or chunk-size line longer than this is not HTTP
MAX_CHUNK = 64 << 20


class _Conn(asyncio.Protocol):
    """One keep-alive connection; received blocks are queued with their arrival stamps."""

    def __init__(self) -> None:
        self.blocks: deque[tuple[int, bytes]] = deque()
        self.buf = b""
        self.buf_ns = 0
        self.waiter: asyncio.Future[None] | None = None
        self.closed: Exception | None = None
        self.transport: asyncio.Transport | None = None
        self.idle_s = float("inf")  # longest wait for the next block of bytes

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.blocks.append((time.monotonic_ns(), data))
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = exc or ConnectionResetError("connection closed by the server")
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    @property
    def usable(self) -> bool:
        return self.closed is None and self.transport is not None and not self.transport.is_closing()

    async def _fill(self, deadline: float) -> None:
        """Move the next received block into the buffer (waiting for one until the deadline)."""
        while not self.blocks:
            if self.closed is not None:
                raise asyncio.IncompleteReadError(self.buf, None)
            self.waiter = asyncio.get_running_loop().create_future()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer within the timeout")
            try:
                await asyncio.wait_for(self.waiter, min(left, self.idle_s))
            except TimeoutError:
                if left > self.idle_s:
                    raise TimeoutError(f"no bytes from the server for {self.idle_s:g} s (idle timeout)") from None
                raise TimeoutError("the request ran past its timeout") from None
            finally:
                self.waiter = None
        self.buf_ns, data = self.blocks.popleft()
        self.buf += data

    async def until(self, sep: bytes, deadline: float) -> tuple[int, bytes]:
        """Bytes up to and including `sep`, with the arrival stamp of the block that completed them."""
        while (i := self.buf.find(sep)) < 0:
            if len(self.buf) > MAX_LINE:
                raise HttpError(f"no {sep!r} in the first {MAX_LINE} bytes: not the protocol expected")
            await self._fill(deadline)
        out, self.buf = self.buf[: i + len(sep)], self.buf[i + len(sep) :]
        return self.buf_ns, out

    async def exactly(self, n: int, deadline: float) -> tuple[int, bytes]:
        while len(self.buf) < n:
            await self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return self.buf_ns, out

    async def some(self, deadline: float) -> tuple[int, bytes]:
        """Whatever is buffered or arrives next; b"" at the end of the stream."""
        if not self.buf:
            try:
                await self._fill(deadline)
            except asyncio.IncompleteReadError:
                return self.buf_ns, b""
        out, self.buf = self.buf, b""
        return self.buf_ns, out


#: Idle keep-alive connections per event loop, scheme and host.
_POOL: dict[tuple[int, str, str, int], list[_Conn]] = {}


async def _connect(scheme: str, host: str, port: int, timeout_s: float, tls: ssl.SSLContext | None) -> _Conn:
    idle = _POOL.setdefault((id(asyncio.get_running_loop()), scheme, host, port), [])
    while idle:
        conn = idle.pop()
        if conn.usable and not conn.blocks:
            return conn
        if conn.transport is not None:
            conn.transport.close()
    loop = asyncio.get_running_loop()
    server_name = host if tls is not None else None
    _, conn = await asyncio.wait_for(
        loop.create_connection(_Conn, host, port, ssl=tls, server_hostname=server_name), timeout_s
    )
    return conn


async def sse_post(
    url: str,
    body: dict[str, Any],
    timeout_s: float,
    on_send: Callable[[int], None] | None = None,
    idle_s: float = float("inf"),
    connect_s: float | None = None,
    access: Access | None = None,
) -> AsyncIterator[tuple[int, str]]:
    """POST JSON; yield (arrival ns, payload) for each SSE `data:` line of the response.

    `timeout_s` bounds the whole request, `idle_s` each wait for bytes (the first byte and the
    gaps between chunks), `connect_s` the TCP connect. `on_send` receives the monotonic ns of
    the moment the request was handed to the kernel."""
    u = urlsplit(url)
    access = access or Access()
    tls = access.for_url(url)
    host, port = u.hostname or "127.0.0.1", u.port or (443 if tls else 80)
    payload = json.dumps(body).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in access.headers().items())
    request = (
        f"POST {u.path or '/'} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\n{extra}Content-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    try:
        conn = await _connect(u.scheme, host, port, min(timeout_s, connect_s or timeout_s), tls)
    except TimeoutError:
        raise TimeoutError(f"no TCP connection to {host}:{port} within {connect_s or timeout_s:g} s") from None
    conn.idle_s = idle_s
    deadline = time.monotonic() + timeout_s
    assert conn.transport is not None
    sent = time.monotonic_ns()
    conn.transport.write(request)
    if on_send:
        on_send(sent)
    reusable = False
    try:
        status, headers = await _head(conn, deadline)
        if status != 200:
            _, raw = await conn.some(deadline)
            raise HttpError(f"HTTP {status}: {raw[:300].decode(errors='replace')}")
        chunked = "chunked" in headers.get("transfer-encoding", "")
        parts = _chunked(conn, deadline) if chunked else _plain(conn, deadline)
        pending = b""
        async for now, part in parts:
            pending += part
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                text = line.decode("utf-8", errors="replace").rstrip("\r")
                if text.startswith("data:"):
                    yield now, text[5:].strip()
        reusable = chunked and headers.get("connection", "").lower() != "close" and not conn.buf
    finally:
        if reusable and conn.usable:
            _POOL[(id(asyncio.get_running_loop()), u.scheme, host, port)].append(conn)
        elif conn.transport is not None:
            conn.transport.close()


async def _head(conn: _Conn, deadline: float) -> tuple[int, dict[str, str]]:
    _, raw = await conn.until(b"\r\n\r\n", deadline)
    lines = raw.decode("latin-1").split("\r\n")
    first = lines[0].split()
    if len(first) < 2 or not first[0].startswith("HTTP/") or not first[1].isdigit():
        raise HttpError(f"not an HTTP response: {lines[0][:80]!r}")
    status = int(first[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
    return status, headers


async def _chunked(conn: _Conn, deadline: float) -> AsyncIterator[tuple[int, bytes]]:
    while True:
        _, size_line = await conn.until(b"\r\n", deadline)
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            raise HttpError(f"a malformed chunk size {size_line[:40]!r}") from None
        if not 0 <= size <= MAX_CHUNK:
            raise HttpError(f"a chunk of {size} bytes")
        if size == 0:
            await conn.until(b"\r\n", deadline)  # the empty trailer
            return
        now, data = await conn.exactly(size + 2, deadline)
        yield now, data[:-2]


async def _plain(conn: _Conn, deadline: float) -> AsyncIterator[tuple[int, bytes]]:
    while True:
        now, data = await conn.some(deadline)
        if not data:
            return
        yield now, data


#: the largest answer sparkfab reads from a server outside a stream (decoded: a gzip body that
#: inflates past it is cut off there, not inflated whole)
MAX_ANSWER = 16 << 20


async def answer(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    total_s: float | None = None,
    max_bytes: int = MAX_ANSWER,
    **kw: Any,
) -> httpx.Response:
    """One request through an httpx client, bounded as a whole: connect, headers and body end
    within `total_s` (the client's read timeout unless given; httpx alone bounds each read, so a
    server that trickles a byte at a time would never time out), and the decoded body within
    `max_bytes`. The answer is an httpx.Response with its body read; a trickle raises
    httpx.ReadTimeout, an oversized body httpx.DecodingError, both httpx.HTTPError."""
    limit = total_s if total_s is not None else (client.timeout.read or 600.0)

    async def read() -> httpx.Response:
        async with client.stream(method, path, **kw) as r:
            body = bytearray()
            async for block in r.aiter_bytes():
                body += block
                if len(body) > max_bytes:
                    raise httpx.DecodingError(f"{path}: an answer larger than {max_bytes >> 20} MiB", request=r.request)
            headers = [(k, v) for k, v in r.headers.multi_items() if k.lower() not in _FRAMING]
            return httpx.Response(r.status_code, headers=headers, content=bytes(body), request=r.request)

    try:
        return await asyncio.wait_for(read(), limit)
    except TimeoutError:
        raise httpx.ReadTimeout(f"{path}: no complete answer within {limit:g} s") from None


#: headers about the wire form of a body, which the body read above no longer has
_FRAMING = {"content-encoding", "transfer-encoding", "content-length"}
