"""A protocol double of an OpenAI-compatible streaming server, with programmable timing.

Prefill takes `prefill_s_per_token` x prompt tokens, then tokens come every
`token_interval_s`, `tokens_per_chunk` at a time (as with MTP drafts), on absolute
deadlines so that sleep errors do not add up. It answers /health, /tokenize,
/v1/models, /v1/completions and /v1/chat/completions (streaming, with usage, continuous
usage stats on request). A `responder` decides the text of chat answers (the quality
battery uses it to play a good or a broken model). For tests and rehearsals only.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_LOCK = threading.Lock()  # Linux; not exported by every Python
Responder = Callable[[dict[str, Any]], dict[str, Any]]  # request body -> {"text": ..., "tool_calls": ...}


@dataclass
class Timing:
    prefill_s_per_token: float = 0.0
    token_interval_s: float = 0.005
    tokens_per_chunk: int = 1
    cached_prefix_factor: float = 1.0  # prefill time of a prompt whose prefix was seen before (0.2 = 5x faster)
    drop_tokens: int = 0  # answer this many tokens short of max_tokens (a server that ignores ignore_eos)
    error_after: int = 0  # after this many tokens, an error chunk as vLLM streams one, and the end (0: never)


def _words(text: str) -> list[str]:
    return text.split() or [""]


def tokenize(text: str) -> list[int]:
    """A stand-in tokenizer: one token per character code (exact and reversible)."""
    return [ord(c) for c in text]


@dataclass
class FakeServer:
    timing: Timing = field(default_factory=Timing)
    responder: Responder | None = None
    model: str = "fake-model"
    #: "vllm": /tokenize, token-id prompts, ignore_eos, usage alone at the end (and continuous on request);
    #: "hf": as transformers serve: no /tokenize, text prompts only, unknown fields refused with 422,
    #: the final usage on the chunk that carries the finish reason.
    dialect: str = "vllm"
    seen_prefixes: set[tuple[int, ...]] = field(default_factory=set)
    requests: list[dict[str, Any]] = field(default_factory=list)
    api_key: str | None = None  # like vLLM's --api-key: /v1/* needs `Authorization: Bearer KEY`
    version: str = "0.32.0"
    #: where the model was loaded from, as vLLM's /v1/models says (`root`)
    root: str | None = None
    #: the /metrics histograms vLLM exports, as sums and counts (seconds)
    histograms: dict[str, list[float]] = field(default_factory=dict)
    #: one path that answers this status and body as given, whatever was asked (a misbehaving server)
    odd: tuple[str, int, bytes] | None = None

    def start(self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None) -> str:
        handler = type("Handler", (_Handler,), {"server_state": self})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        # a short poll: shutdown() waits for the loop's next look (0.5 s by default, per server)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return f"{'https' if tls else 'http'}://{host}:{self.httpd.server_address[1]}"

    def observe(self, name: str, seconds: float) -> None:
        """One observation of vLLM's histogram `name`, under SGLang's name when playing SGLang."""
        if self.dialect == "sglang":
            name = name.replace("vllm:", "sglang:")
        with _LOCK:
            h = self.histograms.setdefault(name, [0.0, 0.0])
            h[0] += seconds
            h[1] += 1

    def metrics_text(self) -> str:
        lines = []
        for name, (total, count) in sorted(self.histograms.items()):
            lines += [f"# TYPE {name} histogram", f'{name}_sum{{model_name="{self.model}"}} {total}']
            lines.append(f'{name}_count{{model_name="{self.model}"}} {count}')
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def prefill_s(self, prompt: list[int]) -> float:
        key = tuple(prompt[:64])
        factor = self.timing.cached_prefix_factor if key in self.seen_prefixes and len(prompt) > 64 else 1.0
        self.seen_prefixes.add(key)
        return len(prompt) * self.timing.prefill_s_per_token * factor


class _Handler(BaseHTTPRequestHandler):
    server_state: FakeServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # small event writes must leave at once (Nagle + delayed ACK would add milliseconds)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)

    def handle_one_request(self) -> None:
        self.arrived = self._arrival()
        super().handle_one_request()

    def _arrival(self) -> float:
        """When the kernel received the request's first bytes (CLOCK_MONOTONIC seconds).

        Prefill is timed from there, not from when this thread got to run: four requests arriving
        together wake four threads that share one GIL. (Clients that pipeline requests would need
        the buffered reader's contents checked first; benchmark clients do not.)"""
        if isinstance(self.connection, ssl.SSLSocket):  # no kernel stamps through TLS
            return time.monotonic()
        _, anc, _, _ = self.connection.recvmsg(1, 64, socket.MSG_PEEK)
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                offset = time.time_ns() - time.monotonic_ns()
                return float(sec * 1_000_000_000 + nsec - offset) / 1e9
        return time.monotonic()

    def _json(self, code: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        key = self.server_state.api_key
        if key is None or not self.path.startswith("/v1/") or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._json(401, {"error": "Unauthorized"})
        return False

    def _odd(self) -> bool:
        odd = self.server_state.odd
        if odd is None or self.path != odd[0]:
            return False
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(odd[1])
        self.send_header("Content-Type", "text/event-stream" if odd[2].startswith(b"data:") else "application/json")
        self.send_header("Content-Length", str(len(odd[2])))
        self.end_headers()
        self.wfile.write(odd[2])
        return True

    def do_GET(self) -> None:
        if self._odd() or not self._authorized():
            return
        if self.path == "/health":
            self._json(200, {"ok": True})
        elif self.path == "/version" and self.server_state.dialect == "vllm":
            self._json(200, {"version": self.server_state.version})
        elif self.path == "/server_info" and self.server_state.dialect == "sglang":
            self._json(200, {"version": self.server_state.version, "tp_size": 2})
        elif self.path == "/metrics" and self.server_state.dialect in ("vllm", "sglang"):
            raw = self.server_state.metrics_text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        elif self.path == "/v1/models":
            row = {"id": self.server_state.model, "object": "model"}
            if self.server_state.root:
                row["root"] = self.server_state.root
            self._json(200, {"data": [row]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self._odd():
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if not self._authorized():
            return
        self.server_state.requests.append(body)
        if self.path == "/tokenize" and self.server_state.dialect == "hf":
            self._json(404, {"detail": "Not Found"})
        elif self.path == "/tokenize":
            ids = tokenize(body.get("prompt", ""))
            self._json(200, {"tokens": ids, "count": len(ids)})
        elif self.path in ("/v1/completions", "/v1/chat/completions"):
            self._generate(body, chat=self.path.endswith("chat/completions"))
        else:
            self._json(404, {"error": "not found"})

    def _prompt(self, body: dict[str, Any], chat: bool) -> list[int]:
        if chat:
            return tokenize("".join(str(m.get("content", "")) for m in body.get("messages", [])))
        p = body.get("prompt", "")
        return list(p) if isinstance(p, list) else tokenize(p)

    def _refused(self, body: dict[str, Any], chat: bool) -> bool:
        """What transformers serve refuses (the "hf" dialect): vLLM's fields and token-id prompts."""
        if self.server_state.dialect != "hf":
            return False
        if "ignore_eos" in body:
            self._json(422, {"detail": "Unexpected fields in the request: {'ignore_eos'}"})
        elif not chat and not isinstance(body.get("prompt"), str):
            self._json(400, {"detail": "prompt must be a string."})
        else:
            return False
        return True

    def _generate(self, body: dict[str, Any], chat: bool) -> None:
        st = self.server_state
        if self._refused(body, chat):
            return
        prompt = self._prompt(body, chat)
        answer = st.responder(body) if st.responder else {}
        text = answer.get("text")
        n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        pieces = _words(text) if text is not None else [f" t{i}" for i in range(max(1, n - st.timing.drop_tokens))]
        if text is not None:
            pieces = [p + (" " if i < len(pieces) - 1 else "") for i, p in enumerate(pieces)]
        if not body.get("stream"):
            self._json(200, _final(st.model, chat, "".join(pieces), len(prompt), len(pieces), answer))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        t = st.timing
        _sleep_until(self.arrived + st.prefill_s(prompt))
        first = time.monotonic()
        st.observe("vllm:time_to_first_token_seconds", first - self.arrived)
        st.observe("vllm:request_prefill_time_seconds", first - self.arrived)
        continuous = st.dialect == "vllm" and bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        sent = 0
        for k in range(0, len(pieces), t.tokens_per_chunk):
            group = pieces[k : k + t.tokens_per_chunk]
            _sleep_until(first + (k // t.tokens_per_chunk) * t.token_interval_s * t.tokens_per_chunk)
            sent += len(group)
            self._event(_chunk(st.model, chat, "".join(group), len(prompt), sent if continuous else None, k == 0))
            if t.error_after and sent >= t.error_after:
                # vLLM's create_streaming_error_response: an ErrorResponse (vllm/entrypoints/serve/engine/protocol.py)
                error = {"message": "the engine died mid-stream", "type": "InternalServerError", "param": None}
                self._raw(b"data: " + json.dumps({"error": {**error, "code": 500}}).encode() + b"\n\n")
                self._raw(b"data: [DONE]\n\n")
                self._raw(b"")
                return
        if answer.get("tool_calls"):
            self._event(
                {
                    "object": "chat.completion.chunk",
                    "model": st.model,
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": answer["tool_calls"]}, "finish_reason": "tool_calls"}
                    ],
                }
            )
        self._usage(body, chat, len(prompt), sent)
        self._raw(b"data: [DONE]\n\n")
        self._raw(b"")
        chunks = max(1, -(-len(pieces) // t.tokens_per_chunk))
        for _ in range(chunks - 1):
            st.observe("vllm:inter_token_latency_seconds", t.token_interval_s * t.tokens_per_chunk)
        st.observe("vllm:e2e_request_latency_seconds", time.monotonic() - self.arrived)

    def _usage(self, body: dict[str, Any], chat: bool, prompt: int, sent: int) -> None:
        """vLLM: a usage-only chunk when asked; transformers serve: usage on the finishing chunk."""
        usage = {"prompt_tokens": prompt, "completion_tokens": sent, "total_tokens": prompt + sent}
        if self.server_state.dialect == "hf":
            part: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
            done = {"index": 0, "finish_reason": "length", **part}
            model = self.server_state.model
            self._event({"object": "text_completion", "model": model, "choices": [done], "usage": usage})
        elif (body.get("stream_options") or {}).get("include_usage"):
            self._event({"choices": [], "usage": usage})

    def _event(self, data: dict[str, Any]) -> None:
        data["server_sent_ns"] = time.monotonic_ns()  # the double's own send time, to check the client
        self._raw(b"data: " + json.dumps(data).encode() + b"\n\n")

    def _raw(self, payload: bytes) -> None:
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()


def _sleep_until(t: float) -> None:
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(left if left > 0.002 else left / 2)


def _chunk(model: str, chat: bool, text: str, prompt_len: int, cumulative: int | None, first: bool) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": None}
    if chat:
        choice["delta"] = {"content": text, **({"role": "assistant"} if first else {})}
    else:
        choice["text"] = text
    data: dict[str, Any] = {
        "object": "chat.completion.chunk" if chat else "text_completion",
        "model": model,
        "choices": [choice],
    }
    if cumulative is not None:
        data["usage"] = {"prompt_tokens": prompt_len, "completion_tokens": cumulative}
    return data


def _final(model: str, chat: bool, text: str, prompt_len: int, n: int, answer: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if answer.get("tool_calls"):
        msg["tool_calls"] = answer["tool_calls"]
    choice = {"index": 0, "message": msg} if chat else {"index": 0, "text": text}
    return {"model": model, "choices": [choice], "usage": {"prompt_tokens": prompt_len, "completion_tokens": n}}


def main(argv: list[str] | None = None) -> int:
    """Run the double in its own process (the client's GIL must not pace the server)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--prefill-s-per-token", type=float, default=0.0)
    p.add_argument("--token-interval-s", type=float, default=0.005)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--cached-prefix-factor", type=float, default=1.0)
    p.add_argument("--drop-tokens", type=int, default=0)
    p.add_argument("--dialect", choices=("vllm", "sglang", "hf"), default="vllm", help="whose API quirks to play")
    p.add_argument("--version", default="0.32.0", help="the engine release it reports")
    p.add_argument("--error-after", type=int, default=0, help="stream an error chunk after this many tokens")
    p.add_argument("--api-key", help="require this key on /v1/* (like vLLM's --api-key)")
    p.add_argument("--tls-cert", help="serve https with this certificate (PEM) ...")
    p.add_argument("--tls-key", help="... and this key")
    p.add_argument("--root", help="report the model as loaded from this directory (vLLM's /v1/models root)")
    p.add_argument(
        "--behaviour",
        choices=("good", "broken"),
        default="good",
        help="how chat answers behave (the quality battery's good or broken model)",
    )
    args = p.parse_args(argv)
    from tests.doubles.chat_model import model_responder

    srv = FakeServer(
        Timing(
            args.prefill_s_per_token,
            args.token_interval_s,
            args.tokens_per_chunk,
            args.cached_prefix_factor,
            args.drop_tokens,
            args.error_after,
        ),
        responder=model_responder(args.behaviour == "good"),
        dialect=args.dialect,
        version=args.version,
        api_key=args.api_key,
        root=args.root,
    )
    tls = None
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    url = srv.start(port=args.port, tls=tls)
    sys.stdout.write(url + "\n")
    sys.stdout.flush()
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
