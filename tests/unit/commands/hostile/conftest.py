"""The misbehaving servers the hostile cases talk to (local doubles on 127.0.0.1 that
misbehave on purpose: silent, garbage, trickling, wrong counts...) and the `server` fixture
that starts the one a case names."""

from __future__ import annotations

import functools
import gzip
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

# ------------------------------------------------------------------- misbehaving servers


class _Raw(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "good"
    served: ClassVar[list[int]] = [0]

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def _json(self, data: Any, code: int = 200) -> None:
        raw = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _raw(self, raw: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.mode == f"trickle{self.path.replace('/', '-')}":
            self._trickle()
            return
        if self.mode == "huge-version" and self.path == "/version":
            self._json({"version": "9" * (900 << 10)})
            return
        if self.mode == "deep-version" and self.path == "/version":
            self._raw(b"[" * 200_000 + b"]" * 200_000)
            return
        if self.mode == "gzip-metrics" and self.path == "/metrics":
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(_bomb())))
            self.end_headers()
            self.wfile.write(_bomb())
            return
        self._json({"status": "ok"})

    def _trickle(self) -> None:
        """Headers, then one byte every 0.1 s: each read is quick, the answer never ends."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        for _ in range(1000):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.1)

    def _odd_post(self) -> bool:
        """The modes whose answer to a POST is not JSON Python reads, or counts that are wrong."""
        deep = b"[" * 200_000 + b"]" * 200_000
        if self.mode == "huge-count":  # no /tokenize, and a million tokens for any text
            if self.path == "/tokenize":
                self._json({"detail": "Not Found"}, 404)
            else:
                self._json({"choices": [{"text": "x"}], "usage": {"prompt_tokens": 1_000_000}})
        elif self.mode == "deep-tokenize" and self.path == "/tokenize":
            self._raw(deep)
        elif self.mode == "deep-chat" and self.path == "/v1/chat/completions":
            self._raw(b'{"choices": ' + deep + b"}")
        else:
            return False
        return True

    def do_POST(self) -> None:
        body = self._body()
        if self.mode == "trickle-chat" and self.path == "/v1/chat/completions":
            self._trickle()
            return
        if self._odd_post():
            return
        if self.path == "/tokenize":
            self._json({"tokens": list(range(100, 140)), "count": 40})
            return
        if not body.get("stream"):
            self._json({"choices": [{"text": "x", "finish_reason": "length"}], "usage": {"prompt_tokens": 8}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        n = body.get("max_tokens", 4)
        with _LOCK:
            self.served[0] += 1
            k = self.served[0]
        for i in range(n):
            if self.mode == "bad-chunk" and k == 2 and i == 1:
                self._chunk(b"data: {not json at all\n\n")
                continue
            if self.mode == "deep-sse" and i == 1:
                self._chunk(b"data: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n")
                continue
            if self.mode == "stall" and i == 1:
                time.sleep(3)
            self._chunk(b"data: " + json.dumps({"choices": [{"text": "x", "index": 0}]}).encode() + b"\n\n")
        usage = {"prompt_tokens": len(body.get("prompt", [])), "completion_tokens": n}
        self._chunk(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


_LOCK = threading.Lock()


@functools.cache
def _bomb() -> bytes:
    """A gzip body of 24 KiB that inflates to 24 MiB of spaces."""
    return gzip.compress(b" " * (24 << 20), compresslevel=9)


def _closed_port() -> tuple[str, Callable[[], None]]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}", lambda: None


def _raw_socket(mode: str) -> tuple[str, Callable[[], None]]:
    """silent: accepts and never answers; garbage: answers with something that is not HTTP."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.settimeout(0.02)  # how soon stop() is seen
    done = threading.Event()
    conns: list[socket.socket] = []

    def loop() -> None:
        while not done.is_set():
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            conns.append(conn)
            if mode == "garbage":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\x00\x01garbage\r\n\r\n")

    t = threading.Thread(target=loop, daemon=True)
    t.start()

    def stop() -> None:
        done.set()
        t.join()
        for x in conns:
            x.close()
        s.close()

    return f"http://127.0.0.1:{s.getsockname()[1]}", stop


def _http(mode: str) -> tuple[str, Callable[[], None]]:
    handler = type("H", (_Raw,), {"mode": mode, "served": [0]})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # a client that gave up is the point
    # a short poll: shutdown() waits for the loop's next look (0.5 s by default, once per case)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    return f"http://127.0.0.1:{httpd.server_address[1]}", stop


@pytest.fixture
def server() -> Iterator[Callable[[str], str]]:
    stops: list[Callable[[], None]] = []

    def start(mode: str) -> str:
        make = (
            _closed_port
            if mode == "closed"
            else (lambda: _raw_socket(mode))
            if mode in ("silent", "garbage")
            else (lambda: _http(mode))
        )
        url, stop = make()
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()
