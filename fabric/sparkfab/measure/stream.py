"""One streaming request to an OpenAI-compatible server, timed on the monotonic clock.

TTFT = first chunk with a choice - send; decode speed = (output tokens - 1) / (t_last -
t_first), from the server's usage (vLLM's TPOT, inverted; robust to chunks that carry several
tokens). Every chunk is kept with its token count (continuous usage stats when the server
sends them, else one per chunk until the final usage says otherwise).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sparkfab.measure.http import HttpError, sse_post


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
    base_url: str, path: str, body: dict[str, Any], result: RequestResult, timeout_s: float = 3600.0
) -> RequestResult:
    body = {**body, "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    seen = 0
    result.send_ns = time.monotonic_ns()
    try:
        async for now, payload in sse_post(base_url.rstrip("/") + path, body, timeout_s):
            if payload == "[DONE]":
                continue  # read on to the end of the response so the connection can be reused
            data = json.loads(payload)
            usage = data.get("usage") or {}
            if data.get("choices"):
                cumulative = usage.get("completion_tokens")
                tokens = (cumulative - seen) if cumulative is not None else 1
                seen = cumulative if cumulative is not None else seen + 1
                result.chunks.append((now, tokens))
                if result.first_ns is None:
                    result.server_first_ns = data.get("server_sent_ns")
                result.first_ns = result.first_ns or now
                result.last_ns = now
                choice = data["choices"][0]
                result.text += choice.get("text") or (choice.get("delta") or {}).get("content") or ""
            if usage and not data.get("choices"):
                result.prompt_tokens = usage.get("prompt_tokens")
                result.completion_tokens = usage.get("completion_tokens")
    except (TimeoutError, OSError, HttpError, asyncio.IncompleteReadError, json.JSONDecodeError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    if result.completion_tokens is None and result.chunks and not result.error:
        result.completion_tokens = seen
    result.validate()
    return result
