"""Prompts of an exact token length, different for every request, and what the server accepts.

Two ways to be exact:
  token ids  where the server has vLLM's /tokenize: the fixed prompt set is tokenized once and
             every prompt is a list of ids from it, sent as is to /v1/completions;
  text       where it has not: the words of the prompt set are measured with the server's own
             count (usage.prompt_tokens of one-token completions), the count is checked to add
             up word by word, and each prompt is a string of words whose costs sum exactly to
             the planned length.
Either way a prompt starts with a per-request nonce and the rest is shuffled with a seed that
differs per run, test, round and request, so a prefix cache cannot reuse work between requests
(nor between two runs against an engine that kept its cache).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import httpx

from sparkfab.errors import BenchError, ServerError
from sparkfab.measure.endpoint import http
from sparkfab.measure.endpoint.access import status_hint

FIXED_TEXT = (
    "The ring all-reduce sums partial results around a circle of machines. Each machine sends one segment "
    "to the next and adds what it receives. Prefill moves large blocks in bursts; decode moves small ones. "
    "Networks are measured in bits per second, memories in bytes per second, and prompts in tokens. "
    "A careful benchmark fixes the prompt, the output length, the seed and the clock before it compares."
)
HEAD = "Notes:"  # text prompts start here, so every word is measured where it will stand: after a word


class PromptMaker(Protocol):
    def make(self, n: int, test: str, round_: int, index: int) -> list[int] | str: ...


@dataclass(frozen=True)
class ServerInfo:
    """What the endpoint accepts, found by probing it once before the run."""

    prompts: str  # "token-ids" or "text"
    ignore_eos: bool  # accepts vLLM's ignore_eos
    head_tokens: int = 0  # text prompts: tokens of HEAD as the server counts them (with any BOS)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        how = (
            "token-id prompts from /tokenize"
            if self.prompts == "token-ids"
            else "text prompts measured with the server's own token counts (no /tokenize)"
        )
        eos = "ignore_eos accepted" if self.ignore_eos else "no ignore_eos: answers that stop early are rejected"
        return f"{how}; {eos}"


class TokenPrompts:
    def __init__(self, vocab: list[int], seed: int | str) -> None:
        if len(vocab) < 16:
            raise ServerError("the tokenizer gave fewer than 16 distinct tokens for the prompt set")
        self.vocab, self.seed = vocab, seed

    def make(self, n: int, test: str, round_: int, index: int) -> list[int]:
        rng = random.Random(f"{self.seed}:{test}:{round_}:{index}")
        nonce = [rng.choice(self.vocab) for _ in range(min(16, n))]
        pad: list[int] = []
        while len(pad) < n - len(nonce):
            block = list(self.vocab)
            rng.shuffle(block)
            pad += block
        return nonce + pad[: n - len(nonce)]


class TextPrompts:
    """Strings of words whose measured token costs add up to the planned length."""

    def __init__(self, costs: dict[str, int], head_tokens: int, seed: int | str) -> None:
        self.costs, self.head_tokens, self.seed = costs, head_tokens, seed
        self.by_cost: dict[int, list[str]] = {}
        for word, c in sorted(costs.items()):
            self.by_cost.setdefault(c, []).append(word)

    def make(self, n: int, test: str, round_: int, index: int) -> str:
        rng = random.Random(f"{self.seed}:{test}:{round_}:{index}")
        budget = n - self.head_tokens
        if budget < 0:
            raise BenchError(f"a prompt of {n} tokens is shorter than the text head ({self.head_tokens} tokens)")
        words: list[str] = []
        pool = list(self.costs)
        limit = 5 * max(self.costs.values())  # the last stretch is solved exactly
        while budget > limit:
            rng.shuffle(pool)
            for w in pool:
                if budget <= limit:
                    break
                words.append(w)
                budget -= self.costs[w]
        end = self._exact(budget, rng)
        if end is None:
            raise ServerError(f"no combination of the prompt set's words makes exactly {n} tokens")
        words += end
        return HEAD + "".join(words)

    def _exact(self, budget: int, rng: random.Random) -> list[str] | None:
        """Words whose costs sum to exactly `budget` (unbounded coin change), picked at random."""
        reach: list[int | None] = [0] + [None] * budget  # reach[b] = cost of the last word of a way to b
        costs = sorted(self.by_cost)
        for b in range(1, budget + 1):
            options = [c for c in costs if c <= b and reach[b - c] is not None]
            reach[b] = rng.choice(options) if options else None
        if reach[budget] is None:
            return None
        out = []
        b = budget
        while b:
            c = reach[b]
            assert c is not None
            out.append(rng.choice(self.by_cost[c]))
            b -= c
        rng.shuffle(out)
        return out


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> httpx.Response:
    return await http.answer(client, "POST", path, json=body)


def _one_token(model: str, prompt: list[int] | str, ignore_eos: bool) -> dict[str, Any]:
    """A greedy one-token completion: the cheapest request that shows the server's prompt count."""
    body: dict[str, Any] = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0}
    if ignore_eos:
        body["ignore_eos"] = True
    return body


async def probe(client: httpx.AsyncClient, model: str, seed: int | str) -> tuple[ServerInfo, PromptMaker]:
    """Find how to make exact prompts on this server and whether it takes ignore_eos."""
    vocab = await _vocab(client, model)
    if vocab is not None:
        ok, _ = await _accepts(client, model, vocab[:8], ignore_eos=True)
        if not ok:
            plain, why = await _accepts(client, model, vocab[:8], ignore_eos=False)
            if not plain:
                raise ServerError(f"/v1/completions refuses a token-id prompt: {why}")
        return ServerInfo("token-ids", ok), TokenPrompts(vocab, seed)
    eos, _ = await _accepts(client, model, HEAD + " ring", ignore_eos=True)
    if not eos:
        plain, why = await _accepts(client, model, HEAD + " ring", ignore_eos=False)
        if not plain:
            raise ServerError(f"/v1/completions refuses a text prompt: {why}")
    counter = _Counter(client, model, eos)
    head = await counter.count(HEAD)
    words = list(dict.fromkeys(" " + w for w in FIXED_TEXT.split()))
    sem = asyncio.Semaphore(8)

    async def cost(w: str) -> int:
        async with sem:
            return await counter.count(HEAD + w) - head

    costs = dict(zip(words, await asyncio.gather(*(cost(w) for w in words)), strict=True))
    # a token is at least one byte of ASCII text (the head's count may add a few special tokens,
    # a BOS): a count above that is the server's mistake, not a plan's
    wrong = [(t, c) for t, c in ((HEAD, head - 8), *costs.items()) if c > len(t.encode())]
    costs = {w: c for w, c in costs.items() if c > 0}
    if wrong or not costs:
        text, count = wrong[0] if wrong else (HEAD, head)
        raise ServerError(
            f"the server's token counts cannot be used for exact prompts ({count} tokens for {text[:40]!r},"
            f" {len(costs)} word(s) of the prompt set cost any); give the server a /tokenize endpoint"
        )
    rng = random.Random(seed)
    mix = list(costs) * 2
    rng.shuffle(mix)
    together = await counter.count(HEAD + "".join(mix))
    want = head + sum(costs[w] for w in mix)
    if together != want:
        raise ServerError(
            f"the server's token count does not add up word by word ({together} tokens for words that cost "
            f"{want} one at a time), so exact text prompts cannot be made; give the server a /tokenize endpoint"
        )
    return ServerInfo("text", eos, head), TextPrompts(costs, head, seed)


def server_error(url: Any, exc: Exception, timeout_s: float | None = None) -> ServerError:
    """What went wrong on the way to the server, in words."""
    if isinstance(exc, httpx.TimeoutException):
        within = f" within {timeout_s:g} s" if timeout_s else ""
        return ServerError(f"{url} gave no answer{within} ({type(exc).__name__})")
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        fix = "the server's certificate is not trusted here: give its CA with --ca-file PEM (or --insecure)"
        return ServerError(f"cannot reach {url}: {fix} ({text[:160]})")
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text:
        return ServerError(f"cannot reach {url}: the server does not speak TLS there: use http:// ({text[:120]})")
    tls = " (if the server speaks TLS there, use https://)" if str(url).startswith("http://") else ""
    if isinstance(exc, httpx.RemoteProtocolError | httpx.DecodingError):
        return ServerError(f"{url} does not speak HTTP as expected{tls} (protocol error: {text[:120]})")
    if isinstance(exc, httpx.ReadError):  # a TLS server drops a plain-HTTP request without a word
        return ServerError(f"{url} closed the connection without an answer{tls}: {text[:120] or 'ReadError'}")
    return ServerError(f"cannot reach {url}: {type(exc).__name__}: {text[:160]}")


async def _vocab(client: httpx.AsyncClient, model: str) -> list[int] | None:
    try:
        r = await _post(client, "/tokenize", {"model": model, "prompt": FIXED_TEXT})
        if r.status_code != 200:
            return None
        tokens = http.decode(r)["tokens"]
        return sorted({t for t in tokens if isinstance(t, int) and not isinstance(t, bool)})
    except httpx.TransportError as exc:
        raise server_error(client.base_url, exc, _timeout(client)) from None
    except (httpx.HTTPError, KeyError, ValueError, TypeError):
        return None


def _timeout(client: httpx.AsyncClient) -> float | None:
    return client.timeout.read


async def _accepts(
    client: httpx.AsyncClient, model: str, prompt: list[int] | str, ignore_eos: bool
) -> tuple[bool, str]:
    try:
        r = await _post(client, "/v1/completions", _one_token(model, prompt, ignore_eos))
    except httpx.HTTPError as exc:
        raise server_error(client.base_url, exc, _timeout(client)) from None
    return r.status_code == 200, f"HTTP {r.status_code}{status_hint(r.status_code)}: {r.text[:200]}"


class _Counter:
    """The server's own token count of a text: usage.prompt_tokens of a one-token completion."""

    def __init__(self, client: httpx.AsyncClient, model: str, ignore_eos: bool) -> None:
        self.client, self.model, self.ignore_eos = client, model, ignore_eos

    async def count(self, text: str) -> int:
        try:
            r = await _post(self.client, "/v1/completions", _one_token(self.model, text, self.ignore_eos))
        except httpx.HTTPError as exc:
            raise server_error(self.client.base_url, exc, _timeout(self.client)) from None
        try:
            r.raise_for_status()
            return int(http.decode(r)["usage"]["prompt_tokens"])
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            raise ServerError(
                f"cannot count tokens with /v1/completions: HTTP {r.status_code}: {r.text[:200]}"
            ) from exc
