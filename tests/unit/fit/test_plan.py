"""sparkfab fit: a model's sizes from its config.json against what its publisher and its own
checkpoint say, and the layouts on Sparks."""

from __future__ import annotations

import json

import pytest

from sparkfab import fit
from sparkfab.fit import plan as fp
from sparkfab.fit.shape import from_dict

#: each preset's total parameters as its publisher states them (model cards), MTP layers included
PUBLISHED = {
    "llama-3.3-70b": 70.6e9,
    "qwen3-235b-a22b": 235e9,
    "deepseek-v3": 685e9,  # 671B main model + 14B MTP module (DeepSeek-V3's README)
    "gpt-oss-120b": 116.83e9,  # its model card's 116.83B
    "qwen3-next-80b-a3b": 80e9,
    "glm-5.3": 744e9,  # GLM-5's 744B (its README), which leaves its MTP layer out
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_presets_parameters_are_its_publishers_within_2_percent(name):
    shape, source = fit.presets()[name]
    assert source and shape.params == pytest.approx(PUBLISHED[name], rel=0.02)


def test_kv_per_token_by_attention_kind():
    gqa = from_dict({"hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8})
    # 2 (K and V) x 8 heads x 128 values x 2 bytes x 80 layers at TP1; at TP16 one head replicated
    assert gqa.token_bytes(1) == {"full": 2 * 8 * 128 * 2 * 80}
    assert gqa.token_bytes(8) == {"full": 2 * 1 * 128 * 2 * 80} == gqa.token_bytes(16)
    mla = fit.presets()["deepseek-v3"][0]
    assert mla.token_bytes(1) == mla.token_bytes(8) == {"mla": (512 + 64) * 2 * 61}  # the latent: not split
    oss = fit.presets()["gpt-oss-120b"][0]
    assert oss.kinds.count("sliding") == oss.kinds.count("full") == 18
    # a sliding layer holds its window (and a block), a full one every token
    long, short = oss.sequence_bytes(1, 100_000), oss.sequence_bytes(1, 1_000)
    per = 2 * 8 * 64 * 2 * 18
    assert long - short == pytest.approx(per * 99_000)
    nxt = fit.presets()["qwen3-next-80b-a3b"][0]
    assert nxt.kinds.count("linear") == 36 and nxt.kinds.count("full") == 12
    # gated delta net: conv inputs (2x16x128 + 32x128) x 3 and a 32 x 128 x 128 state, per layer
    assert nxt.state_values == (2 * 16 * 128 + 32 * 128) * 3 + 32 * 128 * 128
    assert nxt.state_bytes(2) == 36 * nxt.state_values * 2 / 2


def test_layouts_name_what_does_not_divide_and_what_does_not_fit():
    shape = fit.presets()["llama-3.3-70b"][0]
    memory = fp.Memory()
    [one] = fp.layouts(shape, 1, 32768, memory)
    assert not one.fits and "exceed the engine's" in fp.verdict(one, memory)
    six = {(x.tp, x.pp): x for x in fp.layouts(shape, 6, 32768, memory)}
    assert set(six) == {(6, 1), (3, 2), (2, 3), (1, 6)}
    assert "attention heads do not divide by 3" in fp.verdict(six[(3, 2)], memory)
    best = fp.recommend(list(six.values()))
    assert best and best.fits and best.concurrency >= 1
    # MLA's latent is whole on every rank: pipeline stages hold more requests than TP ranks
    glm = {(x.tp, x.pp): x for x in fp.layouts(fit.presets()["glm-5.3"][0], 8, 32768, memory)}
    assert glm[(1, 8)].concurrency > glm[(8, 1)].concurrency


def test_a_context_longer_than_the_cache_names_the_longest_that_fits():
    shape = fit.presets()["llama-3.3-70b"][0]
    memory = fp.Memory(fraction=0.62)
    [x] = [y for y in fp.layouts(shape, 2, 131072, memory) if y.tp == 2]
    assert 0 < x.longest < 131072 and x.concurrency < 1
    assert f"at most {x.longest:,} tokens" in fp.verdict(x, memory)
    assert shape.sequence_bytes(2, x.longest) <= x.kv_cache < shape.sequence_bytes(2, x.longest + 1)


def test_engine_tokens_follow_vllms_block_arithmetic():
    lab = from_dict({"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 16, "num_key_value_heads": 4})
    # 128 MiB / (2 x 4 heads x 64 x 2 bytes x 2 layers = 2,048 B) = 65,536 tokens in blocks of 128
    assert fp.engine_tokens(lab, 1, 128 * 2**20, 128, 16384) == 65536
    assert fp.engine_tokens(lab, 4, 128 * 2**20, 128, 16384) == 262144
    with pytest.raises(ValueError, match="hybrid"):
        fp.engine_tokens(fit.presets()["gpt-oss-120b"][0], 1, 2**30, 128, 4096)


def test_fit_cli_every_preset_and_a_config_file(cli, tmp_path):
    res = cli("fit", "--format", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert {(f["model"], f["sparks"]) for f in doc["fits"]} == {(m, n) for m in PUBLISHED for n in (1, 2, 4, 8)}
    glm8 = next(f for f in doc["fits"] if f["model"] == "glm-5.3" and f["sparks"] == 8)
    assert glm8["recommended"]["max-num-seqs"] >= 1
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "hidden_size": 4096,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 128256,
                "intermediate_size": 14336,
                "max_position_embeddings": 131072,
            }
        )
    )
    table = cli("fit", "--config", str(config), "--sparks", "2")
    assert table.code == 0 and "TP2 x PP1" in table.out and "recipe flags: --tensor-parallel-size" in table.out
    bad = cli("fit", "--config", str(tmp_path / "none.json"))
    assert bad.code != 0 and "no such file" in bad.err
