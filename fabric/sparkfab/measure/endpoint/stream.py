"""One streaming request to an OpenAI-compatible server, timed on the monotonic clock.

TTFT = first chunk that carries a token - send; decode speed = (output tokens - 1) / (t_last -
t_first), from the server's usage (vLLM's TPOT, inverted; robust to chunks that carry several
tokens). Every chunk is kept with its token count (continuous usage stats when the server
sends them, else one per chunk with text until the final usage says otherwise). The final usage
may come alone (vLLM) or on the chunk with the finish reason (transformers serve).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sparkfab.measure.endpoint import http
from sparkfab.measure.endpoint.access import Access
from sparkfab.measure.endpoint.http import HttpError, sse_post


@dataclass
class RequestResult:
    test: str
    round: int
    index: int
    prompt_tokens_planned: int
    output_tokens_planned: int
    send_ns: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    chunks: list[tuple[int, int]] = field(default_factory=list)  # (t_ns, tokens in this chunk)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    text: str = ""
    error: str | None = None
    warmup: bool = False
    server_first_ns: int | None = None  # when the server says it sent the first token (if it says)

    @property
    def ttft_s(self) -> float | None:
        return (self.first_ns - self.send_ns) / 1e9 if self.first_ns else None

    @property
    def decode_tps(self) -> float | None:
        n = self.completion_tokens
        if not (n and n > 1 and self.first_ns and self.last_ns and self.last_ns > self.first_ns):
            return None
        return (n - 1) / ((self.last_ns - self.first_ns) / 1e9)

    def validate(self) -> None:
        """Reject a result that did not do what the plan asked, loudly."""
        if self.error:
            return
        problems = []
        if self.completion_tokens != self.output_tokens_planned:
            problems.append(f"output {self.completion_tokens} tokens, planned {self.output_tokens_planned}")
        if self.prompt_tokens is not None and self.prompt_tokens != self.prompt_tokens_planned:
            problems.append(f"prompt {self.prompt_tokens} tokens, planned {self.prompt_tokens_planned}")
        if problems:
            self.error = "rejected: " + "; ".join(problems)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(ttft_s=self.ttft_s, decode_tps=self.decode_tps)
        return d


async def stream_completion(
    base_url: str,
    path: str,
    body: dict[str, Any],
    result: RequestResult,
    timeout_s: float = 3600.0,
    idle_s: float = float("inf"),
    connect_s: float | None = None,
    access: Access | None = None,
) -> RequestResult:
    """Stream one completion into `result`. Whatever the server sends, the outcome is recorded
    in the result (a malformed chunk, a stall, a lost connection are its error), never raised."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    seen = 0
    result.send_ns = time.monotonic_ns()  # replaced by the moment the request is written

    def sent(ns: int) -> None:
        result.send_ns = ns

    try:
        url = base_url.rstrip("/") + path
        async for now, payload in sse_post(url, body, timeout_s, sent, idle_s, connect_s, access):
            if payload == "[DONE]":
                continue  # read on to the end of the response so the connection can be reused
            seen = _take(result, now, http.decode(payload), seen)
    except (TimeoutError, OSError, HttpError, asyncio.IncompleteReadError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # JSON that is not a chunk
        result.error = f"malformed chunk: {type(exc).__name__}: {exc}"[:300]
    if result.completion_tokens is None and result.chunks and not result.error:
        result.completion_tokens = seen
    result.validate()
    return result


def _take(result: RequestResult, now: int, data: Any, seen: int) -> int:
    """Fold one streamed chunk into the result; return the tokens seen so far."""
    if not isinstance(data, dict):
        raise ValueError(f"a chunk that is not a JSON object: {str(data)[:60]}")
    if "error" in data:  # vLLM streams {"error": {"message", "type", "code"}} when a request fails mid-way
        err = data["error"]
        what = (
            f"{err.get('type', 'error')} {err.get('code', '')}: {err.get('message', '')}"
            if isinstance(err, dict)
            else err
        )
        result.error = f"server error in the stream: {' '.join(str(what).split())}"[:300]
        return seen
    usage = data.get("usage") or {}
    choices = data.get("choices") or []
    if choices:
        choice = choices[0]
        delta = choice.get("delta") or {}
        text = choice.get("text") or delta.get("content") or ""
        cumulative = _count(usage.get("completion_tokens"))
        if cumulative is not None:  # continuous usage stats, or the final count on the last chunk
            tokens, seen = cumulative - seen, cumulative
        else:
            tokens = 1 if (text or delta.get("tool_calls") or delta.get("reasoning_content")) else 0
            seen += tokens
        result.chunks.append((now, tokens))
        if tokens > 0:  # a role-only opening chunk is not a token
            if result.first_ns is None:
                result.first_ns = now
                result.server_first_ns = data.get("server_sent_ns")
            result.last_ns = now
        result.text += text
    if usage and (not choices or any(c.get("finish_reason") for c in choices)):
        result.prompt_tokens = _count(usage.get("prompt_tokens"))
        result.completion_tokens = _count(usage.get("completion_tokens"))
    return seen


def _count(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ValueError(f"a token count that is not a whole number: {str(value)[:40]}")
