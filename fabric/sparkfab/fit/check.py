"""Whether an instance's launch settings fit its Sparks: the weights alone, and one request of the
context it asks for, against what its memory fraction leaves (what `validate` warns of).

vLLM's settings are read as vLLM reads them: `gpu-memory-utilization` (0.92 when not given, its
default in 0.32's vllm/config/cache.py), `max-model-len` (the model's own positions when not
given), `kv-cache-dtype`, `pipeline-parallel-size`, and `kv-cache-memory-bytes`, which replaces
the fraction's KV share with a fixed size (sizes as vLLM reads them: `engines.flags.size_value`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sparkfab.engines.flags import size_value
from sparkfab.fit import plan as fp
from sparkfab.fit.shape import Shape

#: vLLM's own default for gpu-memory-utilization (0.32's vllm/config/cache.py; 0.9 before)
VLLM_FRACTION = 0.92
#: the largest fraction a suggestion names: unified memory is the OS's too (at 0.9 it keeps 12 GB)
SUGGEST_MAX = 0.9


def _number(value: Any, default: float) -> float:
    try:
        return float(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def vllm_problems(shape: Shape, tp: int, flags: dict[str, Any], on_disk: int | None = None) -> list[str]:
    """Why vLLM's settings `flags` cannot fit `shape` on Sparks at TP `tp` (empty: they fit)."""
    fraction = _number(flags.get("gpu-memory-utilization"), VLLM_FRACTION)
    pp = int(_number(flags.get("pipeline-parallel-size"), 1)) or 1
    context = size_value(flags.get("max-model-len")) or shape.max_context
    kv_bytes = 1 if str(flags.get("kv-cache-dtype", "auto")).startswith("fp8") else None
    memory = fp.Memory(fraction=fraction, kv_bytes=kv_bytes)
    if not context:
        return []
    x = fp.layout(shape, tp, pp, context, memory, on_disk)
    fixed = size_value(flags.get("kv-cache-memory-bytes"))
    room = float(fixed) if fixed else x.kv_cache
    if x.weights + memory.runtime <= memory.engine and x.sequence <= room:
        return []
    if x.weights + memory.runtime > memory.engine:
        said = (
            f"each Spark holds {x.weights / 1e9:,.1f} GB of weights at TP{tp} x PP{pp}, and "
            f"gpu-memory-utilization {fraction:g} leaves the engine {memory.engine / 1e9:,.1f} GB of a Spark's "
            f"{memory.total / 1e9:,.2f} GB (with {memory.runtime / 2**30:g} GiB for its runtime)"
        )
    else:
        setting = "kv-cache-memory-bytes" if fixed else f"gpu-memory-utilization {fraction:g}"
        said = (
            f"max-model-len {context:,} needs {x.sequence / 1e9:,.2f} GB of KV cache per Spark for one request, "
            f"and {setting} leaves {room / 1e9:,.2f} GB"
        )
    return [f"{said}: {_what_fits(shape, tp, pp, context, memory, room, fixed is not None, on_disk)}"]


def _what_fits(
    shape: Shape, tp: int, pp: int, context: int, memory: fp.Memory, room: float, fixed: bool, on_disk: int | None
) -> str:
    """The nearest setting that fits: a larger fraction (up to SUGGEST_MAX), a shorter context, or
    more Sparks."""
    x = fp.layout(shape, tp, pp, context, memory, on_disk)
    need = (x.weights + memory.runtime + x.sequence) / memory.total + 0.01
    if not fixed and need <= SUGGEST_MAX:
        return f"gpu-memory-utilization {need:.2f} would fit"
    if room > 0 and x.weights + memory.runtime <= memory.engine:
        shorter = fp.longest(shape, tp, pp, room, memory.kv_bytes)
        if shorter > 0:
            return f"max-model-len {shorter:,} would fit"
    wide = replace(memory, fraction=SUGGEST_MAX)
    for n in (tp * 2**k for k in range(1, 7)):
        y = fp.layout(shape, n, pp, context, wide, on_disk)
        if y.fits:
            return f"TP{n} (more Sparks) at gpu-memory-utilization {SUGGEST_MAX:g} would fit"
    return f"no TP up to {tp * 64} fits it"
