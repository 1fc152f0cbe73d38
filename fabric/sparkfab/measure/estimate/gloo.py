"""The lab engine's traffic: Gloo over TCP (torch's Gloo process group) on the lab's veths.

Measured on lab veths (MTU 9000) with torch.distributed at TP2 and TP4 (`benchmarks/gloo_bytes.py`,
`benchmarks/results/gloo_bytes_2core.txt`), a Gloo all-reduce of S bytes sends
S * f * 1.0104 + 2(N-1) * 790 bytes per rank: the ring's payload exactly, 1.04 % of headers (a
TCP/IP and Ethernet header on every 8,948-byte segment, and the acknowledgements a rank sends for
what it receives), and about 790 bytes per ring step (Gloo's message header, a short message's
segment and acknowledgement). The headers are the wire's: the lab's shaper cuts TCP's 64 KB
segments into frames as a cable carries them (0.25 % while its 128 KiB bucket passed them
whole, before #59). For a prefill that is the paper's formula plus 1.0 %; for decode
(S = H * b per token) the fixed part is of the same order as the payload. A decode pass also
all-gathers the token scores (`logits_bytes`), and so does the prefill's one pass for each
request's first token: on a short prompt that pass's fixed bytes are a visible share (128 tokens
at TP8: 2.7 % beyond the headers, `gloo_prefill_bytes_per_token`).
"""

from __future__ import annotations

from sparkfab.measure.estimate import (
    BYTES_PER_VALUE,
    GlooView,
    Setup,
    all_reduces_per_token,
    logits_bytes,
    ring_factor,
)

#: Gloo over TCP, measured (see the docstring above): bytes per ring step beyond the payload,
#: and the share of headers on large messages.
GLOO_STEP_BYTES = 790
GLOO_PAYLOAD_OVERHEAD = 0.0104


def gloo_bytes_per_allreduce(nbytes: float, n: int) -> float:
    """Bytes one rank sends for a Gloo all-reduce of `nbytes` among `n` ranks (lab veths)."""
    if n < 2:
        return 0.0
    return nbytes * ring_factor(n) * (1 + GLOO_PAYLOAD_OVERHEAD) + 2 * (n - 1) * GLOO_STEP_BYTES


def gloo_bytes_per_allgather(nbytes: float, n: int) -> float:
    """Bytes one rank sends for a Gloo all-gather whose result is `nbytes` among `n` ranks: the
    ring passes on every other rank's share, n - 1 steps with the same fixed part each."""
    if n < 2:
        return 0.0
    return nbytes * (n - 1) / n * (1 + GLOO_PAYLOAD_OVERHEAD) + (n - 1) * GLOO_STEP_BYTES


def gloo_view(s: Setup) -> GlooView:
    """What the lab's engine sends per prompt token and per output token; in decode per pass of
    `s.batch` tokens of `s.batch` tokens: the all-reduces and the all-gather of the scores."""
    per_value = s.model.hidden * BYTES_PER_VALUE
    a = all_reduces_per_token(s)
    logits = logits_bytes(s, s.batch)
    return GlooView(
        prefill_bytes_per_token=a * per_value * ring_factor(s.tp) * (1 + GLOO_PAYLOAD_OVERHEAD),
        prefill_pass_bytes=a * gloo_bytes_per_allreduce(0, s.tp) + gloo_bytes_per_allgather(logits, s.tp),
        decode_bytes_per_token_formula=a * per_value * ring_factor(s.tp) + logits * (s.tp - 1) / s.tp / s.batch,
        decode_bytes_per_token=(
            a * gloo_bytes_per_allreduce(per_value * s.batch, s.tp) + gloo_bytes_per_allgather(logits, s.tp)
        )
        / s.batch,
        step_bytes=GLOO_STEP_BYTES,
    )


def gloo_prefill_bytes_per_token(s: Setup, prompt_tokens: int) -> float:
    """Bytes one rank sends per prompt token for `prompt_tokens` prefilled in one pass (a
    round's `s.batch` requests together): each all-reduce over the whole prompt, with Gloo's
    per-step bytes, and the all-gather of the scores of every request's first token."""
    view = gloo_view(s)
    return view.prefill_bytes_per_token + view.prefill_pass_bytes / prompt_tokens
