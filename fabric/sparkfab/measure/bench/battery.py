"""The quality battery of the four-Spark ring write-up: speed only matters if the model is
still right. Five checks, each pass/fail with its evidence:

  count      count to 100 exactly
  hangul     Korean text comes back without U+FFFD replacement characters (3 passes)
  tools      a tool call with the right function and JSON arguments
  needle     a code hidden in the middle of a long context is found
  prefix     turn 2 of a conversation reaches its first token much sooner than turn 1
             (the prefix cache reused turn 1's work)
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from sparkfab.measure.endpoint import http
from sparkfab.measure.endpoint.access import Access, status_hint
from sparkfab.measure.endpoint.prompts import server_error
from sparkfab.measure.endpoint.stream import RequestResult, stream_completion

HANGUL = "안녕하세요, 반갑습니다. 오늘 서울의 날씨가 정말 좋네요. 한국어 문장이 깨지지 않는지 확인합니다."
NEEDLE = "X7-ALPHA-93"
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    evidence: str  # what was seen, in a line: why it passed or what broke


async def _chat(c: httpx.AsyncClient, model: str, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    r = await http.answer(
        c,
        "POST",
        "/v1/chat/completions",
        json={"model": model, "messages": messages, "temperature": 0.0, "max_tokens": kw.pop("max_tokens", 512), **kw},
    )
    r.raise_for_status()
    return dict(http.decode(r)["choices"][0]["message"])


def _filler(chars: int) -> str:
    base = "The ring carries partial sums from one machine to the next, segment after segment. "
    return (base * (chars // len(base) + 1))[:chars]


async def count(c: httpx.AsyncClient, model: str) -> Check:
    msg = await _chat(
        c,
        model,
        [{"role": "user", "content": "Count from 1 to 100, separated by single spaces, and write nothing else."}],
    )
    got = (msg.get("content") or "").split()
    want = [str(i) for i in range(1, 101)]
    if got == want:
        return Check("count", True, "1 .. 100, exactly")
    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
    return Check(
        "count",
        False,
        f"{len(got)} numbers; first difference at position {first + 1}: "
        f"{got[first] if first < len(got) else 'end'!r} instead of {want[first]!r}"
        if first < 100
        else f"{len(got)} numbers",
    )


async def hangul(c: httpx.AsyncClient, model: str, passes: int = 3) -> Check:
    bad = 0
    for _ in range(passes):
        msg = await _chat(c, model, [{"role": "user", "content": f"Repeat exactly: {HANGUL}"}])
        text = msg.get("content") or ""
        bad += text.count("\ufffd") + (0 if re.search("[\uac00-\ud7a3]", text) else 1)
    return Check("hangul", bad == 0, f"{bad} replacement characters over {passes} passes")


async def tools(c: httpx.AsyncClient, model: str) -> Check:
    msg = await _chat(
        c,
        model,
        [{"role": "user", "content": "What is the weather in Istanbul? Use the tool."}],
        tools=[TOOL],
        tool_choice="auto",
    )
    calls = msg.get("tool_calls") or []
    if not calls:
        return Check("tools", False, f"no tool call; answered {str(msg.get('content'))[:80]!r}")
    fn = calls[0].get("function", {})
    try:
        args = http.decode(fn.get("arguments") or "")
    except ValueError:
        return Check("tools", False, f"arguments are not JSON: {fn.get('arguments')!r}")
    ok = fn.get("name") == "get_weather" and isinstance(args, dict) and "istanbul" in str(args.get("city", "")).lower()
    return Check("tools", ok, f"{fn.get('name')}({json.dumps(args, ensure_ascii=False)})")


async def needle(c: httpx.AsyncClient, model: str, chars: int = 60_000) -> Check:
    half = _filler(chars // 2)
    context = f"{half} The secret code is {NEEDLE}. {half}"
    msg = await _chat(c, model, [{"role": "user", "content": context + "\n\nWhat is the secret code?"}])
    text = msg.get("content") or ""
    return Check("needle", NEEDLE in text, f"answer {text[:80]!r} ({chars:,} characters of context)")


async def _turn(
    c: httpx.AsyncClient,
    model: str,
    history: list[dict[str, str]],
    n: int,
    max_tokens: int,
    timeout_s: float,
    access: Access | None,
) -> RequestResult:
    """One turn of a conversation, streamed as a client would: its first token's time, its text."""
    out = RequestResult("prefix", n, 0, 0, 0)
    body = {"model": model, "messages": history, "max_tokens": max_tokens, "temperature": 0.0}
    await stream_completion(
        str(c.base_url), "/v1/chat/completions", body, out, timeout_s=timeout_s, idle_s=timeout_s, access=access
    )
    return out


async def prefix(
    c: httpx.AsyncClient, model: str, chars: int = 40_000, access: Access | None = None, timeout_s: float = 600.0
) -> Check:
    history = [{"role": "user", "content": _filler(chars) + "\n\nSummarise this in one line."}]
    first = await _turn(c, model, history, 1, 32, timeout_s, access)
    history += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "And in one word?"}]
    second = await _turn(c, model, history, 2, 8, timeout_s, access)
    t1, t2 = first.ttft_s, second.ttft_s
    if t1 is None or t2 is None:
        return Check("prefix", False, f"no first token (turn 1: {first.error}, turn 2: {second.error})")
    return Check("prefix", t2 <= 0.5 * t1, f"turn 1 TTFT {t1:.3f} s, turn 2 TTFT {t2:.3f} s")


CHECKS: dict[str, Callable[..., Awaitable[Check]]] = {
    "count": count,
    "hangul": hangul,
    "tools": tools,
    "needle": needle,
    "prefix": prefix,
}


async def run(
    url: str,
    model: str,
    names: list[str] | None = None,
    timeout_s: float = 600.0,
    context_chars: int = 60_000,
    access: Access | None = None,
) -> list[Check]:
    """Run the checks one after another; a check that cannot get an answer fails with the reason.
    A server that cannot be reached at all (or does not speak HTTP) is a ServerError."""
    access = access or Access()
    prefix_kw = {"chars": context_chars * 2 // 3, "access": access, "timeout_s": timeout_s}
    sized: dict[str, dict[str, Any]] = {"needle": {"chars": context_chars}, "prefix": prefix_kw}
    out = []
    timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
    verify: Any = access.ssl_context() if url.startswith("https") else True
    async with httpx.AsyncClient(
        base_url=url, timeout=timeout, headers=access.headers(), verify=verify, trust_env=False
    ) as c:
        for name in names or list(CHECKS):
            try:
                out.append(await CHECKS[name](c, model, **sized.get(name, {})))
            except httpx.TransportError as exc:
                raise server_error(url, exc, timeout_s) from None
            except (httpx.HTTPError, KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
                hint = status_hint(exc.response.status_code) if isinstance(exc, httpx.HTTPStatusError) else ""
                out.append(Check(name, False, f"{type(exc).__name__}: {str(exc)[:160]}{hint}"))
    return out


def run_sync(
    url: str,
    model: str,
    names: list[str] | None = None,
    context_chars: int = 60_000,
    timeout_s: float = 600.0,
    access: Access | None = None,
) -> list[Check]:
    return asyncio.run(run(url, model, names, timeout_s, context_chars, access))
