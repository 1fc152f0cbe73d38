"""A model's shape as memory sees it, read from its Hugging Face `config.json`: what each decoder
layer keeps per token or per sequence (full and grouped-query attention, MLA's compressed latent,
sliding windows, linear-attention and state-space states), how many parameters it holds and at how
many bits. Every figure follows what vLLM allocates (its `KVCacheSpec`s, 0.32):

- full and sliding attention: a key and a value of `head_dim` per KV head a rank holds, where a
  rank holds `kv_heads / tp` heads, or one replicated head when there are fewer heads than ranks;
- MLA (`kv_lora_rank`): one latent of `kv_lora_rank + qk_rope_head_dim` per token, the same on
  every rank (not split by TP); DeepSeek sparse attention's indexer adds `index_head_dim` FP8
  values and a 4-byte scale per 128 of them;
- a sliding layer keeps at most its window (plus one block) of tokens per sequence;
- a gated-delta-net (Qwen3-Next) or Mamba2 layer keeps a fixed state per sequence, split by TP:
  its convolution's last `kernel - 1` inputs and its recurrent state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkfab.modelcheck import text_config

#: bytes per element of each dtype a config names
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "float8_e4m3fn": 1}


#: sizes beyond every published model's, refused before anything is counted (a layer list of a
#: billion entries is a hostile file, not a model)
BOUNDS = {
    "hidden_size": 1 << 20,
    "num_hidden_layers": 10_000,
    "num_attention_heads": 1 << 16,
    "num_key_value_heads": 1 << 16,
    "vocab_size": 1 << 24,
    "max_position_embeddings": 1 << 26,
    "n_routed_experts": 1 << 16,
    "num_experts": 1 << 16,
    "num_local_experts": 1 << 16,
    "intermediate_size": 1 << 24,
    "moe_intermediate_size": 1 << 24,
    "head_dim": 1 << 16,
}


class ShapeError(ValueError):
    """A config.json this reader cannot size."""


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    layers: int  # decoder layers (MTP layers are `mtp_layers`)
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    kinds: tuple[str, ...]  # per decoder layer: "full", "sliding", "mla", "linear" or "none"
    window: int  # a sliding layer's window, tokens
    mla_width: int  # values per token of an MLA layer's latent (0: not MLA)
    index_bytes: int  # bytes per token of a DSA indexer's cache per layer (0: none)
    state_values: int  # values a linear layer keeps per sequence at TP1
    params: float  # every weight, MTP layers included
    weight_bits: float  # bits per weight as stored, scales included
    dtype_bytes: int  # the model's activation and KV dtype, bytes
    mtp_layers: int
    max_context: int
    experts: int
    source: str = ""
    config: tuple[tuple[str, Any], ...] = ()  # the config.json's own items (what TP must divide)

    def kv_heads_per_rank(self, tp: int) -> int:
        return max(1, self.kv_heads // tp)

    def token_bytes(self, tp: int, kv_bytes: int | None = None) -> dict[str, float]:
        """Bytes one token takes per rank, per kind of layer ("linear" and "none": nothing)."""
        b = kv_bytes or self.dtype_bytes
        per = {
            "full": 2 * self.kv_heads_per_rank(tp) * self.head_dim * b,
            "sliding": 2 * self.kv_heads_per_rank(tp) * self.head_dim * b,
            "mla": self.mla_width * b + self.index_bytes,
        }
        out: dict[str, float] = {}
        for kind in self.kinds:
            if kind in per:
                out[kind] = out.get(kind, 0) + per[kind]
        return out

    def state_bytes(self, tp: int) -> float:
        """Bytes a sequence's linear-attention or state-space states take per rank."""
        return self.kinds.count("linear") * self.state_values * self.dtype_bytes / tp

    def sequence_bytes(self, tp: int, context: int, kv_bytes: int | None = None, block: int = 16) -> float:
        """Bytes one sequence of `context` tokens takes per rank."""
        per = self.token_bytes(tp, kv_bytes)
        total = per.get("full", 0) * context + per.get("mla", 0) * context
        total += per.get("sliding", 0) * min(context, self.window + block)
        return total + self.state_bytes(tp)


def _int(c: dict[str, Any], key: str, default: int = 0) -> int:
    v = c.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default


def _kinds(c: dict[str, Any], layers: int) -> tuple[str, ...]:
    """Each decoder layer's cache kind, from whichever pattern the config declares."""
    mla = bool(_int(c, "kv_lora_rank"))
    full = "mla" if mla else "full"
    names = {
        "full_attention": full,
        "attention": full,
        "indexed_attention": full,
        "sliding_attention": "sliding",
        "sliding_window": "sliding",
        "chunked_attention": "sliding",
        "linear_attention": "linear",
        "mamba": "linear",
        "mamba2": "linear",
    }
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) >= layers:
        return tuple(names.get(str(t), full) for t in types[:layers])
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) >= layers:  # Nemotron-H: M mamba, * attention, - MLP, E MoE
        return tuple({"M": "linear", "*": full}.get(ch, "none") for ch in pattern[:layers])
    if (every := _int(c, "full_attention_interval")) > 0:  # Qwen3-Next: every 4th is full attention
        return tuple(full if (i + 1) % every == 0 else "linear" for i in range(layers))
    window = _int(c, "sliding_window")
    if window and c.get("use_sliding_window", True) is not False:
        every = _int(c, "sliding_window_pattern")
        if every > 0:  # Gemma: one full layer in every `pattern`
            return tuple(full if (i + 1) % every == 0 else "sliding" for i in range(layers))
        return ("sliding",) * layers
    return (full,) * layers


def _bits(raw: dict[str, Any], c: dict[str, Any], dtype_bytes: int) -> float:
    """Bits per weight as stored: a quantization config's, its scales included, else the dtype's."""
    q = raw.get("quantization_config") or c.get("quantization_config")
    if isinstance(q, dict):
        method = str(q.get("quant_method", "")).lower()
        algo = str(q.get("quant_algo", "") or q.get("format", "")).lower()
        if "fp4" in algo or "fp4" in method:
            # NVFP4: 4-bit values and an FP8 scale per 16 (the paper's 4.5). MXFP4 is 4.25 on the
            # experts, but gpt-oss keeps attention and embeddings in bf16: 4.5 over all, an estimate
            return 4.5
        if method in ("fp8", "fbgemm_fp8") or "fp8" in algo:
            return 8.0
        if isinstance(q.get("bits"), int):  # GPTQ, AWQ: a 16-bit scale per group of 128
            return float(q["bits"]) + 16 / int(q.get("group_size") or 128)
    return 8.0 * dtype_bytes


def _params(c: dict[str, Any], kinds: tuple[str, ...], hidden: int, heads: int, kv_heads: int, head_dim: int) -> float:
    """Every weight: embeddings, attention, MLPs or experts, MTP layers (one decoder layer each)."""
    vocab, inter = _int(c, "vocab_size"), _int(c, "intermediate_size")
    embed = vocab * hidden * (1 if c.get("tie_word_embeddings") else 2)
    if _int(c, "kv_lora_rank"):
        q_rank, kv_rank = _int(c, "q_lora_rank"), _int(c, "kv_lora_rank")
        nope, rope, v = _int(c, "qk_nope_head_dim"), _int(c, "qk_rope_head_dim"), _int(c, "v_head_dim")
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        attn = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * hidden
        if _int(c, "index_head_dim"):  # DSA's indexer: its own queries, one key, head weights
            ih, ihd = _int(c, "index_n_heads"), _int(c, "index_head_dim")
            attn += (q_rank or hidden) * ih * ihd + hidden * ihd + hidden * ih
    else:
        attn = hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden
    experts = _int(c, "n_routed_experts") or _int(c, "num_experts") or _int(c, "num_local_experts")
    moe_inter = _int(c, "moe_intermediate_size") or inter
    shared = _int(c, "n_shared_experts") + (1 if _int(c, "shared_expert_intermediate_size") else 0)
    shared_inter = _int(c, "shared_expert_intermediate_size") or moe_inter
    moe = experts * 3 * hidden * moe_inter + shared * 3 * hidden * shared_inter + hidden * experts
    dense = 3 * hidden * inter
    layers = len(kinds)
    mlp_types = c.get("mlp_layer_types")
    if isinstance(mlp_types, list) and len(mlp_types) >= layers:
        n_moe = sum(1 for t in mlp_types[:layers] if t == "sparse")
    elif experts:  # DeepSeek: the first k dense; Qwen MoE: every `step`-th, less mlp_only_layers
        first, step = _int(c, "first_k_dense_replace"), _int(c, "decoder_sparse_step", 1) or 1
        only = {i for i in c.get("mlp_only_layers") or [] if isinstance(i, int)}
        n_moe = sum(1 for i in range(layers) if i >= first and (i + 1) % step == 0 and i not in only)
    else:
        n_moe = 0
    per_layer_attn = attn  # linear layers are sized as attention ones (their projections are alike)
    body = layers * per_layer_attn + n_moe * moe + (layers - n_moe) * dense
    mtp = _int(c, "num_nextn_predict_layers") or _int(c, "mtp_num_hidden_layers")
    mtp_layer = per_layer_attn + (moe if experts else dense) + 2 * hidden * hidden
    return float(embed + body + mtp * mtp_layer)


def _state_values(c: dict[str, Any]) -> int:
    """Values one linear layer keeps per sequence (TP1): convolution inputs and recurrent state."""
    if _int(c, "linear_num_value_heads"):  # Qwen3-Next's gated delta net
        kh, vh = _int(c, "linear_num_key_heads"), _int(c, "linear_num_value_heads")
        kd, vd, kern = (
            _int(c, "linear_key_head_dim"),
            _int(c, "linear_value_head_dim"),
            _int(c, "linear_conv_kernel_dim", 4),
        )
        return (2 * kh * kd + vh * vd) * (kern - 1) + vh * kd * vd
    if _int(c, "mamba_n_heads") or _int(c, "ssm_state_size"):  # Mamba2
        nh, hd = _int(c, "mamba_n_heads"), _int(c, "mamba_head_dim")
        state, groups, kern = _int(c, "ssm_state_size"), _int(c, "n_groups", 1), _int(c, "conv_kernel", 4)
        inner = nh * hd or _int(c, "expand", 2) * _int(c, "hidden_size")
        return (inner + 2 * groups * state) * (kern - 1) + (nh or 1) * (hd or inner) * state
    return 0


def from_dict(raw: dict[str, Any], name: str = "", source: str = "") -> Shape:
    """A Shape from a config.json's mapping; ShapeError when it lacks a size this needs."""
    c = text_config(raw)
    hidden, layers, heads = _int(c, "hidden_size"), _int(c, "num_hidden_layers"), _int(c, "num_attention_heads")
    if not (hidden and layers and heads):
        raise ShapeError("a config.json with hidden_size, num_hidden_layers and num_attention_heads")
    for key, most in BOUNDS.items():
        if _int(c, key) > most:
            raise ShapeError(f"{key} {_int(c, key):,} is beyond any model this sizes (at most {most:,})")
    kv_heads = _int(c, "num_key_value_heads") or heads
    head_dim = _int(c, "head_dim") or hidden // heads
    dtype = str(c.get("torch_dtype") or c.get("dtype") or raw.get("torch_dtype") or "bfloat16")
    # vLLM's `--dtype auto` runs a float32 checkpoint in 16 bits (its config's _resolve_auto_dtype;
    # the lab's float32 model logs dtype=torch.bfloat16): the engine's memory holds 16-bit values
    dtype_bytes = min(DTYPE_BYTES.get(dtype, 2), 2)
    kinds = _kinds(c, layers)
    index = _int(c, "index_head_dim")
    return Shape(
        name=name or str(c.get("model_type") or "model"),
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=_int(c, "vocab_size"),
        kinds=kinds,
        window=_int(c, "sliding_window"),
        mla_width=_int(c, "kv_lora_rank") + _int(c, "qk_rope_head_dim"),
        index_bytes=index + 4 * -(-index // 128) if index else 0,
        state_values=_state_values(c),
        params=_params(c, kinds, hidden, heads, kv_heads, head_dim),
        weight_bits=_bits(raw, c, dtype_bytes),
        dtype_bytes=dtype_bytes,
        mtp_layers=_int(c, "num_nextn_predict_layers") or _int(c, "mtp_num_hidden_layers"),
        max_context=_int(c, "max_position_embeddings"),
        experts=_int(c, "n_routed_experts") or _int(c, "num_experts") or _int(c, "num_local_experts"),
        source=source,
        config=tuple(raw.items()),
    )


def weights_on_disk(directory: Path) -> int | None:
    """The checkpoint's own byte count: its safetensors index's total_size, or its files' sizes."""
    index = directory / "model.safetensors.index.json"
    try:
        if index.is_file():
            size = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size")
            if isinstance(size, int) and size > 0:
                return size
        files = list(directory.glob("*.safetensors"))
        return sum(f.stat().st_size for f in files) or None
    except (OSError, ValueError, AttributeError):
        return None
