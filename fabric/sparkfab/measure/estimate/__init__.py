"""The network cost of tensor parallelism, from a model's architecture (Part I of the paper).

Symbols (README "Estimate" has them with their meaning):
  H hidden size, L layers, A = 2L + 1 all-reduces per token (+2 per MTP layer, +1 for its
  embedding, when the draft runs on the split model), b = 2 bytes per bf16 value,
  N TP size, f = 2(N-1)/N ring factor, C prefill chunk (tokens), P prompt tokens,
  B link speed (bit/s).
  bytes per prompt token per Spark   = A * H * b * f
  extra prefill time (B_old -> B_new) <= P * A * H * b * f * 8 * (1/B_new - 1/B_old)
  TTFT increase                       <= network share * (B_old / B_new - 1),
  network share = P * A * H * b * f * 8 / B_old / prefill time (measured TTFT at B_old).
Everything is pure arithmetic: no clock, no I/O.

The lab's engine all-reduces with Gloo over TCP instead: `sparkfab.measure.estimate.gloo` adds what
Gloo sends beyond the payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sparkfab import spark
from sparkfab.errors import EstimateError
from sparkfab.measure.estimate.model import ModelSpec
from sparkfab.measure.plans import PLAN, Test
from sparkfab.modelcheck import VOCAB_PADDING
from sparkfab.switches import catalog

BYTES_PER_VALUE = 2  # activations are bf16 whatever the weight format
EMULATED_GBPS = spark.ROOT_GBPS  # one PCIe Gen5 x4 root, measured with ib_write_bw (paper Section 7.3)
SPARK_MEMORY_GBPS = 273.0  # GB/s, a DGX Spark reading its own memory


@dataclass(frozen=True)
class Setup:
    model: ModelSpec
    tp: int
    chunk: int = 4096
    # the paper's comparison: 200 Gb/s against 100 Gb/s, at the rates the modes stand for
    from_gbps: float = spark.SPEEDS["200"].nominal_gbps
    to_gbps: float = spark.SPEEDS["100e"].nominal_gbps
    mtp_split: bool = False  # the draft runs on the split model (adds its all-reduces)
    batch: int = 1  # requests decoding together

    def check(self) -> None:
        if self.tp < 1:
            raise EstimateError(f"TP size {self.tp}: must be at least 1")
        if self.model.heads % self.tp:
            raise EstimateError(
                f"TP {self.tp} does not divide the {self.model.heads} attention heads of {self.model.name}"
            )
        for name, v in (("--from", self.from_gbps), ("--to", self.to_gbps)):
            if v <= 0:
                raise EstimateError(f"link speed {name} {v:g} Gb/s: must be above 0")
        if self.chunk < 1:
            raise EstimateError(f"prefill chunk {self.chunk}: must be at least 1 token")


def ring_factor(n: int) -> float:
    return 2 * (n - 1) / n


def all_reduces_per_token(s: Setup) -> int:
    extra = (2 * s.model.mtp_layers + 1) if s.mtp_split and s.model.mtp_layers else 0
    return 2 * s.model.layers + 1 + extra


def logits_bytes(s: Setup, tokens: int) -> float:
    """The all-gather of the token scores after each decode pass (vLLM gathers them on every
    platform: `Platform.use_all_gather`), as the whole gathered block: the vocabulary as the
    split head holds it (padded to a multiple of 64) x tokens."""
    return -(-s.model.vocab // VOCAB_PADDING) * VOCAB_PADDING * tokens * BYTES_PER_VALUE


@dataclass(frozen=True)
class GlooView:
    """The lab's engine: traffic per prompt token and per decode token with Gloo's overhead
    (`sparkfab.measure.estimate.gloo.gloo_view`)."""

    prefill_bytes_per_token: float
    prefill_pass_bytes: float  # beyond those, once per prefill pass: ring steps, first token's scores
    decode_bytes_per_token_formula: float
    decode_bytes_per_token: float
    step_bytes: int


def bytes_per_token(s: Setup, n: int | None = None) -> float:
    """Bytes each Spark sends per prompt token (payload, ring all-reduce)."""
    return all_reduces_per_token(s) * s.model.hidden * BYTES_PER_VALUE * ring_factor(n or s.tp)


def seconds(nbytes: float, gbps: float) -> float:
    return nbytes * 8 / (gbps * 1e9)


def extra_time(nbytes: float, old_gbps: float, new_gbps: float) -> float:
    """Upper bound: the same bytes at the slower speed, nothing overlapped with compute."""
    return nbytes * 8 * (1 / (new_gbps * 1e9) - 1 / (old_gbps * 1e9))


@dataclass(frozen=True)
class ChunkView:
    """One prefill chunk's all-reduce (Section 4): its block, what each Spark sends, in how many steps."""

    chunk_tokens: int
    block_bytes: float
    sent_bytes: float
    ring_steps: int
    segment_bytes: float
    send_s_from: float
    send_s_to: float


def chunk_view(s: Setup) -> ChunkView:
    block = s.chunk * s.model.hidden * BYTES_PER_VALUE
    sent = block * ring_factor(s.tp)
    return ChunkView(
        chunk_tokens=s.chunk,
        block_bytes=block,
        sent_bytes=sent,
        ring_steps=2 * (s.tp - 1),
        segment_bytes=block / s.tp,
        send_s_from=seconds(sent, s.from_gbps),
        send_s_to=seconds(sent, s.to_gbps),
    )


@dataclass(frozen=True)
class PlanRow:
    """One test of the plan: its prefill bytes per Spark and the extra prefill time they bound."""

    test: str
    requests: int
    prompt_tokens: int
    prefill_bytes: float
    extra_s: float
    extra_s_emulated: float


def plan_table(s: Setup, bytes_per_tok: float | None = None, tests: Sequence[Test] = PLAN) -> tuple[PlanRow, ...]:
    bpt = bytes_per_tok or bytes_per_token(s)
    rows = []
    for t in tests:
        total = t.requests * t.prompt_tokens * bpt
        rows.append(
            PlanRow(
                test=t.name,
                requests=t.requests,
                prompt_tokens=t.requests * t.prompt_tokens,
                prefill_bytes=total,
                extra_s=extra_time(total, s.from_gbps, s.to_gbps),
                extra_s_emulated=extra_time(total, s.from_gbps, EMULATED_GBPS),
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Measured:
    """The network share of a measured prefill, and the percentage bound it implies."""

    prompt_tokens: int
    ttft_s: float
    send_s: float
    network_share: float
    increase_bound: float
    increase_bound_emulated: float


def with_ttft(s: Setup, prompt_tokens: int, ttft: float) -> Measured:
    if ttft <= 0:
        raise EstimateError(f"measured TTFT {ttft:g} s: must be above 0")
    send = seconds(prompt_tokens * bytes_per_token(s), s.from_gbps)
    share = send / ttft
    return Measured(
        prompt_tokens=prompt_tokens,
        ttft_s=ttft,
        send_s=send,
        network_share=share,
        increase_bound=share * (s.from_gbps / s.to_gbps - 1),
        increase_bound_emulated=share * (s.from_gbps / EMULATED_GBPS - 1),
    )


@dataclass(frozen=True)
class Decode:
    """Decode: small, latency-bound all-reduces, bounded by the weight-read floor."""

    tokens_per_pass: int
    allreduce_bytes: float
    sent_per_allreduce: float
    send_us_from: float
    send_us_to: float
    bytes_per_pass: float
    weight_bytes_per_spark: float
    pass_floor_s: float
    traffic_bound_gbps: float
    extra_per_pass_s: float


def decode(s: Setup, memory_gbps: float = SPARK_MEMORY_GBPS) -> Decode:
    tokens = s.batch * (1 + s.model.mtp_tokens)
    per_ar = tokens * s.model.hidden * BYTES_PER_VALUE
    sent_ar = per_ar * ring_factor(s.tp)
    logits = logits_bytes(s, tokens) * (s.tp - 1) / s.tp  # the ring all-gather of the scores
    per_pass = (2 * s.model.layers + 1) * sent_ar + logits
    weights = s.model.active_params * s.model.bits_per_weight / 8 / s.tp
    floor = weights / (memory_gbps * 1e9)
    return Decode(
        tokens_per_pass=tokens,
        allreduce_bytes=per_ar,
        sent_per_allreduce=sent_ar,
        send_us_from=seconds(sent_ar, s.from_gbps) * 1e6,
        send_us_to=seconds(sent_ar, s.to_gbps) * 1e6,
        bytes_per_pass=per_pass,
        weight_bytes_per_spark=weights,
        pass_floor_s=floor,
        traffic_bound_gbps=per_pass * 8 / floor / 1e9 if floor else 0.0,
        extra_per_pass_s=extra_time(per_pass, s.from_gbps, s.to_gbps),
    )


@dataclass(frozen=True)
class TpRow:
    """Section 10 at one TP size: how bytes and computing scale, the TTFT and the bound."""

    tp: int
    bytes_factor: float
    compute_factor: float
    ttft_s: float
    increase_bound: float


def tp_projection(
    s: Setup,
    baseline_ttft: float,
    prompt_tokens: int = 8192,
    baseline_tp: int = 8,
    sizes: tuple[int, ...] = (2, 4, 8, 16),
) -> tuple[TpRow, ...]:
    """Section 10: split the measured baseline into sending (estimate) and computing, scale the
    computing by baseline_tp/N, and bound the increase at each TP size."""
    send_base = seconds(prompt_tokens * bytes_per_token(s, baseline_tp), s.from_gbps)
    compute_base = baseline_ttft - send_base
    if compute_base <= 0:
        raise EstimateError(
            f"baseline TTFT {baseline_ttft:g} s is shorter than sending the prefill "
            f"({send_base:.2f} s): it cannot be a measured TTFT at {s.from_gbps:g} Gb/s"
        )
    rows = []
    for n in sizes:
        send = seconds(prompt_tokens * bytes_per_token(s, n), s.from_gbps)
        ttft = compute_base * baseline_tp / n + send
        extra = extra_time(prompt_tokens * bytes_per_token(s, n), s.from_gbps, s.to_gbps)
        rows.append(
            TpRow(
                tp=n,
                bytes_factor=bytes_per_token(s, n) / bytes_per_token(s, baseline_tp),
                compute_factor=baseline_tp / n,
                ttft_s=ttft,
                increase_bound=extra / ttft,
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class RealCable:
    """Section 9: the most a real 100G cable adds on top of a result measured on the emulated link."""

    measured_increase: float
    real_cable_at_most: float
    added_points: float


def real_cable(
    s: Setup,
    bytes_per_tok: float,
    prompt_tokens: int,
    ttft_from: float,
    measured_increase: float,
    real_gbps: float = spark.SPEEDS["100"].gbps,
) -> RealCable:
    more = extra_time(prompt_tokens * bytes_per_tok, EMULATED_GBPS, real_gbps) / ttft_from
    return RealCable(measured_increase, measured_increase + more, more)


@dataclass(frozen=True)
class SwitchChoice:
    switch: str | None  # the smallest switch of the catalog that carries them, if any
    breakout: str


def switch_sizing(sparks: int) -> dict[str, SwitchChoice]:
    return {
        str(gbps): SwitchChoice(
            catalog.smallest_switch(sparks, gbps), "2x200G per 400G port" if gbps == 200 else "4x100G per 400G port"
        )
        for gbps in (200, 100)
    }


@dataclass(frozen=True)
class TpSent:
    tp: int
    sent_per_allreduce: float  # bytes each Spark sends for one prefill chunk's all-reduce


@dataclass(frozen=True)
class Estimate:
    """Everything `sparkfab estimate` prints; `to_dict()` is its JSON (keys in the README)."""

    model: str
    tp: int
    from_gbps: float
    to_gbps: float
    emulated_gbps: float
    allreduces_per_token: int
    bytes_per_value: int
    ring_factor: float
    bytes_per_token: float
    extra_s_per_1000_tokens: float
    extra_s_per_1000_tokens_emulated: float
    real_cable_s_per_1000_tokens: float
    chunk: ChunkView
    plan: tuple[PlanRow, ...]
    decode: Decode
    tp_table: tuple[TpSent, ...]
    switch: dict[str, SwitchChoice]
    gloo: GlooView | None = None  # the lab's engine (estimate --lab)
    measured: Measured | None = None  # with a measured TTFT
    tp_projection: tuple[TpRow, ...] | None = None  # likewise

    @property
    def emulated_comparison(self) -> bool:
        """The emulated link (one PCIe root) is a comparison only for links faster than it."""
        return self.from_gbps > self.emulated_gbps

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def estimate(
    s: Setup,
    ttft: float | None = None,
    ttft_prompt: int = 8192,
    tests: Sequence[Test] = PLAN,
    gloo: GlooView | None = None,
) -> Estimate:
    """Every part of the estimate for `s` (with `gloo`: the lab engine's traffic, `gloo_view`)."""
    s.check()
    bpt = bytes_per_token(s)
    return Estimate(
        model=s.model.name,
        tp=s.tp,
        from_gbps=s.from_gbps,
        to_gbps=s.to_gbps,
        emulated_gbps=EMULATED_GBPS,
        allreduces_per_token=all_reduces_per_token(s),
        bytes_per_value=BYTES_PER_VALUE,
        ring_factor=ring_factor(s.tp),
        bytes_per_token=bpt,
        extra_s_per_1000_tokens=extra_time(1000 * bpt, s.from_gbps, s.to_gbps),
        extra_s_per_1000_tokens_emulated=extra_time(1000 * bpt, s.from_gbps, EMULATED_GBPS),
        real_cable_s_per_1000_tokens=extra_time(1000 * bpt, EMULATED_GBPS, spark.SPEEDS["100"].gbps),
        chunk=chunk_view(s),
        plan=plan_table(s, tests=tests),
        decode=decode(s),
        tp_table=tuple(TpSent(n, chunk_view(Setup(s.model, n, s.chunk)).sent_bytes) for n in (2, 4, 8, 16)),
        switch=switch_sizing(s.tp),
        gloo=gloo,
        measured=with_ttft(s, ttft_prompt, ttft) if ttft is not None else None,
        tp_projection=tp_projection(s, ttft, ttft_prompt, baseline_tp=s.tp) if ttft is not None else None,
    )
