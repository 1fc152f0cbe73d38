"""Model description for the estimate: from a preset or a Hugging Face config.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkfab.errors import EstimateError, Unavailable
from sparkfab.files import yamlload


@dataclass(frozen=True)
class ModelSpec:
    name: str
    hidden: int  # H: values per token in each all-reduce
    layers: int  # L: decoder layers (MTP layers excluded)
    vocab: int
    heads: int
    mtp_layers: int = 0  # n_mtp from the checkpoint
    active_params: float = 0.0  # parameters read per token (MoE: active), for the decode floor
    bits_per_weight: float = 16.0
    mtp_tokens: int = 0  # draft tokens checked per decode pass (MTP speculative decoding)


PRESETS: dict[str, ModelSpec] = {
    # GLM-5.3 NVFP4 as measured in the 200-vs-100 Gb/s paper (Section 7.2, 4.2).
    "glm-5.3": ModelSpec(
        "glm-5.3",
        hidden=6144,
        layers=78,
        vocab=154880,
        heads=64,
        mtp_layers=1,
        active_params=40e9,
        bits_per_weight=4.5,
        mtp_tokens=4,
    ),
    "llama-3.3-70b": ModelSpec(
        "llama-3.3-70b", hidden=8192, layers=80, vocab=128256, heads=64, active_params=70.6e9, bits_per_weight=16.0
    ),
    "qwen3-235b-a22b": ModelSpec(
        "qwen3-235b-a22b", hidden=4096, layers=94, vocab=151936, heads=64, active_params=22e9, bits_per_weight=16.0
    ),
    "deepseek-v3": ModelSpec(
        "deepseek-v3",
        hidden=7168,
        layers=61,
        vocab=129280,
        heads=128,
        mtp_layers=1,
        active_params=37e9,
        bits_per_weight=8.0,
    ),
}


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """vLLM's get_text_config: text_config, or thinker_config.text_config (Omni models)."""
    if isinstance(cfg.get("text_config"), dict):
        return {**cfg, **cfg["text_config"]}
    thinker = cfg.get("thinker_config")
    if isinstance(thinker, dict) and isinstance(thinker.get("text_config"), dict):
        return {**cfg, **thinker["text_config"]}
    return cfg


_BOUNDS = {"hidden_size": 1 << 20, "num_hidden_layers": 10_000, "num_attention_heads": 1 << 16}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _count(cfg: dict[str, Any], key: str, hi: int, lo: int = 1) -> int | None:
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{key} is {value!r}, not a whole number in {lo}-{hi:,}")
    return value


def from_config(path: str | Path) -> ModelSpec:
    try:
        raw = json.loads(yamlload.read_text(path, "config.json"), parse_constant=_reject_constant)
    except FileNotFoundError:
        raise Unavailable(f"{path}: no such file") from None
    except yamlload.YamlProblem as exc:
        raise EstimateError(f"{path}: {exc.message}") from None
    except json.JSONDecodeError as exc:
        raise EstimateError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise EstimateError(f"{path}: JSON nested too deep") from None
    except ValueError as exc:
        raise EstimateError(f"{path}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise EstimateError(f"{path}: a config.json is a JSON object, this is a {type(raw).__name__}")
    cfg = _text_config(raw)
    try:
        sizes = {k: _count(cfg, k, hi) for k, hi in _BOUNDS.items()}
        vocab = _count(cfg, "vocab_size", 1 << 24, lo=0) or 0
        mtp_key = "num_nextn_predict_layers" if "num_nextn_predict_layers" in cfg else "mtp_num_hidden_layers"
        mtp = _count(cfg, mtp_key, 64, lo=0) or 0
    except ValueError as exc:
        raise EstimateError(f"{path}: {exc}") from None
    missing = [k for k, v in sizes.items() if v is None]
    if missing:
        raise EstimateError(
            f"{path}: missing {', '.join(missing)} (looked at the top level, text_config and "
            "thinker_config.text_config)"
        )
    return ModelSpec(
        name=str(cfg.get("model_type") or Path(path).stem)[:64],
        hidden=int(sizes["hidden_size"] or 0),
        layers=int(sizes["num_hidden_layers"] or 0),
        vocab=vocab,
        heads=int(sizes["num_attention_heads"] or 0),
        mtp_layers=mtp,
    )


def preset(name: str) -> ModelSpec:
    try:
        return PRESETS[name]
    except KeyError:
        raise EstimateError(
            f"unknown model preset '{name}' (known: {', '.join(sorted(PRESETS))}); or pass --config config.json"
        ) from None


def with_overrides(spec: ModelSpec, **kw: Any) -> ModelSpec:
    return replace(spec, **{k: v for k, v in kw.items() if v is not None})
