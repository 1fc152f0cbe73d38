"""What TP asks of a checkpoint, hybrid models' linear-attention heads included (Qwen3-Next's
gated delta net config keys as its published config.json names them)."""

from __future__ import annotations

from sparkfab.modelcheck import tp_problems

QWEN3_NEXT = {  # Qwen/Qwen3-Next-80B-A3B-Instruct's config.json, the numbers TP divides
    "num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 5120,
    "moe_intermediate_size": 512, "vocab_size": 151936, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
}  # fmt: skip


def test_a_hybrids_linear_heads_are_checked_against_tp():
    assert tp_problems(QWEN3_NEXT, 4) == []
    assert any("linear_num_key_heads 6 " in p for p in tp_problems({**QWEN3_NEXT, "linear_num_key_heads": 6}, 4))


def test_a_nested_linear_attention_block_is_read():
    kimi = {"num_attention_heads": 32, "linear_attn_config": {"num_heads": 30}}
    assert any("linear_attn_config.num_heads 30" in p for p in tp_problems(kimi, 4))
