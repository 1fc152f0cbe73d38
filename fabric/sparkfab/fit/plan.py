"""What fits on N Sparks: for each tensor- x pipeline-parallel layout the model's sizes allow, the
weights and the KV cache each Spark holds, the longest context and the requests at once that fit,
and what the layout sends over the network per token (the paper's method).

A Spark's memory is one pool the OS, the engine's runtime and the model share. vLLM takes
`gpu-memory-utilization` of the total it sees for itself; of that, weights come first, then the
runtime's own (activations at the largest batch, CUDA graphs, NCCL's buffers), which vLLM measures
at start-up; what is left is KV cache. Figures and their sources:

- TOTAL: 121.63 GB, what Ray's memory monitor read as a Spark's whole memory (kindlingai, in
  ../shared/reference/spark-fabric-facts.md: "115.68GB / 121.63GB"; a Spark has 128 GB of LPDDR5x,
  the rest is the firmware's and the kernel's).
- RUNTIME: 4 GiB by default, an assumption: vLLM's start-up log says the engine's own figure
  ("Available KV cache memory"), and `--runtime-gib` takes it.
- The fraction: 0.8 by default (leaves about 24 GB to the OS, sshd, Docker and a page cache); the
  paper served GLM-5.3 at TP8 with 0.726.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkfab.fit.shape import Shape
from sparkfab.modelcheck import tp_problems

SPARK_TOTAL_BYTES = 121.63e9
RUNTIME_BYTES = 4 * 2**30
FRACTION = 0.8
ACTIVATION_BYTES = 2  # activations cross the network in bf16 whatever the weights' format


@dataclass(frozen=True)
class Memory:
    total: float = SPARK_TOTAL_BYTES
    fraction: float = FRACTION
    runtime: float = RUNTIME_BYTES
    kv_bytes: int | None = None  # bytes per KV value (1: --kv-cache-dtype fp8); None: the model's

    @property
    def engine(self) -> float:
        return self.total * self.fraction


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    weights: float  # bytes per Spark (the largest stage's share)
    kv_cache: float  # bytes per Spark left for KV cache (negative: the weights do not fit)
    sequence: float  # bytes one sequence of `context` tokens takes per Spark
    context: int  # the context the figures are for
    longest: int  # the longest context one sequence can have (0: none fits)
    concurrency: float  # sequences of `context` tokens at once
    tp_bytes_per_token: float  # each Spark sends per prompt token, tensor parallelism's all-reduces
    pp_bytes_per_token: float  # sent per prompt token across each stage boundary
    problems: tuple[str, ...] = ()  # why vLLM would refuse this layout (empty: it can run)

    @property
    def fits(self) -> bool:
        return not self.problems and self.kv_cache > 0 and self.concurrency >= 1

    @property
    def tokens(self) -> int:
        """vLLM's "KV cache size" in tokens: sequences at once x context."""
        return int(self.concurrency * self.context)


def _stage_layers(layers: int, pp: int) -> int:
    """The most decoder layers one pipeline stage holds (vLLM splits them as evenly as it can)."""
    return -(-layers // pp)


def weights_per_spark(shape: Shape, tp: int, pp: int, on_disk: int | None = None) -> float:
    """The largest share of the weights one Spark holds: its stage's layers, split by TP (the
    embedding or the head rides with the first or last stage; MTP layers with the last)."""
    total = on_disk if on_disk else shape.params * shape.weight_bits / 8
    embed = shape.vocab * shape.hidden * shape.weight_bits / 8
    per_layer = max(total - 2 * embed, 0) / (shape.layers + shape.mtp_layers)
    stage = _stage_layers(shape.layers, pp) + shape.mtp_layers
    ends = 2 * embed if pp == 1 else embed
    return (stage * per_layer + ends) / tp


def longest(shape: Shape, tp: int, pp: int, room: float, kv_bytes: int | None) -> int:
    """The longest context one sequence fits in `room` bytes (binary search on the sequence's size)."""
    lo, hi = 0, shape.max_context or 1 << 22
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _sequence(shape, tp, pp, mid, kv_bytes) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _sequence(shape: Shape, tp: int, pp: int, context: int, kv_bytes: int | None) -> float:
    """One sequence's bytes on one Spark: its stage's share of the layers."""
    return shape.sequence_bytes(tp, context, kv_bytes) * _stage_layers(shape.layers, pp) / shape.layers


def layout(shape: Shape, tp: int, pp: int, context: int, memory: Memory, on_disk: int | None = None) -> Layout:
    """The figures of one layout at one context."""
    problems = list(tp_problems(dict(shape.config), tp))
    if pp > shape.layers:
        problems.append(f"{pp} pipeline stages are more than its {shape.layers} layers")
    weights = weights_per_spark(shape, tp, pp, on_disk)
    room = memory.engine - weights - memory.runtime
    seq = _sequence(shape, tp, pp, context, memory.kv_bytes)
    ring = 2 * (tp - 1) / tp
    reduces = 2 * _stage_layers(shape.layers, pp) + 1
    return Layout(
        tp=tp,
        pp=pp,
        weights=weights,
        kv_cache=room,
        sequence=seq,
        context=context,
        longest=longest(shape, tp, pp, room, memory.kv_bytes) if room > 0 else 0,
        concurrency=room / seq if room > 0 and seq > 0 else 0.0,
        tp_bytes_per_token=reduces * shape.hidden * ACTIVATION_BYTES * ring,
        # vLLM hands the next stage the hidden states and the residual, one of each per token
        pp_bytes_per_token=2 * shape.hidden * ACTIVATION_BYTES if pp > 1 else 0.0,
        problems=tuple(problems),
    )


def layouts(shape: Shape, sparks: int, context: int, memory: Memory, on_disk: int | None = None) -> list[Layout]:
    """Every TP x PP = `sparks` layout, TP first (the paper's: one instance across all Sparks)."""
    pairs = [(tp, sparks // tp) for tp in range(sparks, 0, -1) if sparks % tp == 0]
    return [layout(shape, tp, pp, context, memory, on_disk) for tp, pp in pairs]


def recommend(options: list[Layout], requests: int = 8) -> Layout | None:
    """The widest TP that holds `requests` requests of the context at once (pipeline stages run one
    after another, so one request decodes only as fast as TP makes it), fewer bytes on the wire
    among equals; when none holds that many, the layout that holds the most."""
    fitting = [x for x in options if x.fits]
    if not fitting:
        return None
    enough = [x for x in fitting if x.concurrency >= requests]
    if enough:
        return max(enough, key=lambda x: (x.tp, -(x.tp_bytes_per_token + x.pp_bytes_per_token)))
    return max(fitting, key=lambda x: (int(x.concurrency), x.tp))


def verdict(x: Layout, memory: Memory) -> str:
    """Why a layout does or does not fit, with the figures."""
    if x.problems:
        return "; ".join(x.problems)
    if x.kv_cache <= 0:
        return (
            f"weights {x.weights / 1e9:,.1f} GB and the runtime's {memory.runtime / 1e9:,.1f} GB exceed "
            f"the engine's {memory.engine / 1e9:,.1f} GB"
        )
    if x.concurrency < 1:
        return (
            f"one request of {x.context:,} tokens needs {x.sequence / 1e9:,.2f} GB of KV cache, "
            f"{x.kv_cache / 1e9:,.2f} GB are left: at most {x.longest:,} tokens"
        )
    return "fits"


def engine_tokens(
    shape: Shape, tp: int, kv_cache_bytes: int, block: int, context: int, kv_bytes: int | None = None
) -> int:
    """The "KV cache size" vLLM logs for `kv_cache_bytes` per rank (as `--kv-cache-memory-bytes`
    gives it): whole blocks of `block` tokens across every layer, then the requests of `context`
    tokens those blocks hold, times `context` (kv_cache_utils.get_kv_cache_capacity)."""
    if set(shape.kinds) - {"full", "mla", "none"}:
        raise ValueError("vLLM pads a hybrid model's layer groups to one page size: not this count")
    per_token = sum(shape.token_bytes(tp, kv_bytes).values())
    if per_token <= 0:
        raise ValueError("a model with no per-token cache has no KV capacity in tokens")
    blocks = int(kv_cache_bytes // (per_token * block))
    per_request = -(-context // block)
    return int(blocks / per_request * context)
