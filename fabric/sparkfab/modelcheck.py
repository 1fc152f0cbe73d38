"""What tensor parallelism asks of a checkpoint's architecture, and where sparkfab can read it.

vLLM splits a model across the ranks of an instance: the attention heads, the key/value heads
(or replicates them when there are fewer than ranks), the MLP's intermediate size and the
vocabulary padded to a multiple of 64. A size that does not divide stops every rank before a
weight loads (`Total number of attention heads (16) must be divisible by tensor parallel size
(3)`), long after the argv parsed. The numbers come from the checkpoint's `config.json`: one a
recipe names or declares (`config:`, `architecture:`), or the checkpoint itself where this
machine holds it (a path the recipe mounts from a host directory, the lab's model, a Hugging Face
cache). vLLM's own check of the same config runs too where vLLM is installed (`sparkfab.oracle`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: vLLM pads the vocabulary to this multiple before splitting it (DEFAULT_VOCAB_PADDING_SIZE)
VOCAB_PADDING = 64
HF_CACHE = "/root/.cache/huggingface"


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config (multimodal configs nest it)."""
    for path in (("text_config",), ("thinker_config", "text_config"), ("llm_config",)):
        node: Any = config
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and "num_attention_heads" in node:
            return node
    return config


def _int(config: dict[str, Any], key: str) -> int | None:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


#: the heads of hybrid models' linear-attention and state-space layers, which vLLM splits as it
#: splits attention heads: Qwen3-Next's gated delta net, Mamba2's heads, Kimi Linear's KDA
LINEAR_HEADS = ("linear_num_key_heads", "linear_num_value_heads", "mamba_n_heads", "linear_num_heads")


def _linear_heads(c: dict[str, Any]) -> dict[str, int]:
    out = {k: n for k in LINEAR_HEADS if (n := _int(c, k))}
    nested = c.get("linear_attn_config")
    if isinstance(nested, dict) and (n := _int(nested, "num_heads")):
        out["linear_attn_config.num_heads"] = n
    return out


def tp_problems(config: dict[str, Any], tp: int) -> list[str]:
    """Why a checkpoint of this architecture cannot run at tensor-parallel size `tp` (empty: it can)."""
    c = text_config(config)
    out = []
    heads = _int(c, "num_attention_heads")
    if heads and heads % tp:
        out.append(f"its {heads} attention heads do not divide by {tp}")
    kv = _int(c, "num_key_value_heads") or heads
    if kv and (tp % kv if tp >= kv else kv % tp):
        out.append(f"its {kv} key/value heads neither divide by {tp} nor divide {tp} (to be replicated)")
    for key in ("intermediate_size", "moe_intermediate_size"):
        size = _int(c, key)
        if size and size % tp:
            out.append(f"its {key} {size} does not divide by {tp}")
    for key, n in _linear_heads(c).items():
        if n % tp:
            out.append(
                f"its {key} {n} (linear-attention or state-space heads, split across ranks) do not divide by {tp}"
            )
    vocab = _int(c, "vocab_size")
    if vocab:
        padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
        if padded % tp:
            out.append(f"its vocabulary ({vocab}, padded to {padded}) does not divide by {tp}")
    return out


def host_path(model: str, volumes: list[str], runtime: str) -> Path | None:
    """Where a container's model path lives on the host (through the recipe's volumes), or the
    path itself for a process; None for a Hugging Face id or a path no volume mounts."""
    if not model.startswith("/"):
        return None
    if runtime == "process":
        return Path(model)
    for volume in volumes:
        parts = volume.split(":")
        if len(parts) >= 2:
            src, dst = parts[0], parts[1].rstrip("/")
            if model == dst or model.startswith(dst + "/"):
                return Path(src + model[len(dst) :])
    return None


def hf_snapshot(model: str, hf_home: Path | None = None) -> Path | None:
    """The newest snapshot of a Hugging Face id in this machine's cache."""
    if model.startswith("/") or "/" not in model:
        return None
    home = hf_home or Path(os.environ.get("HF_HOME") or Path.home() / ".cache/huggingface")
    snapshots = home / "hub" / f"models--{model.replace('/', '--')}" / "snapshots"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime) if snapshots.is_dir() else []
    return found[-1].parent if found else None


def local_checkpoint(model: str, volumes: list[str], runtime: str) -> Path | None:
    """The checkpoint directory on this machine (with its config.json), when it is here."""
    where = host_path(model, volumes, runtime) or hf_snapshot(model)
    try:
        return where if where is not None and (where / "config.json").is_file() else None
    except OSError:
        return None


def read_config(directory: Path) -> dict[str, Any] | None:
    """A checkpoint's config.json, or None when it is unreadable or not a mapping."""
    try:
        data = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
