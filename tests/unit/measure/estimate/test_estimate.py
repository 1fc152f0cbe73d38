"""The estimate reproduces the figures of the 200-vs-100 Gb/s paper."""

from __future__ import annotations

import json

import pytest

from sparkfab.measure import estimate as est
from sparkfab.measure.estimate.model import PRESETS, from_config
from sparkfab.measure.plans import PLAN

GLM = PRESETS["glm-5.3"]
S = est.Setup(GLM, tp=8)


def test_bytes_per_prompt_token():
    assert est.all_reduces_per_token(S) == 157
    assert round(est.bytes_per_token(S) / 1e6, 2) == 3.38


def test_ttft_bound_per_1000_tokens():
    assert round(est.extra_time(1000 * est.bytes_per_token(S), 200, 100), 3) == 0.135
    assert round(est.extra_time(1000 * est.bytes_per_token(S), 200, 109), 2) == 0.11


def test_prefill_chunk_section_4():
    ch = est.chunk_view(S)
    assert round(ch.block_bytes / 1e6, 1) == 50.3 and round(ch.sent_bytes / 1e6, 1) == 88.1
    assert ch.ring_steps == 14 and round(ch.segment_bytes / 1e6, 1) == 6.3
    assert (round(ch.send_s_from * 1e3, 1), round(ch.send_s_to * 1e3, 1)) == (3.5, 7.0)


def test_tp_table_section_3_4():
    sent = {n: est.chunk_view(est.Setup(GLM, n)).sent_bytes / 1e6 for n in (2, 4, 8, 16)}
    paper = {2: 50.3, 4: 75.5, 8: 88.1, 16: 94.3}  # the paper multiplies the rounded 50.3 MB block
    assert all(abs(sent[n] - paper[n]) <= 0.1 for n in paper), sent


# Section 5.2 and 7.3: prefill bytes per Spark (GB) and the two bounds (s).
PAPER_PLAN = {
    "P1": (3.5, 0.14, 0.12),
    "P2": (27.7, 1.11, 0.92),
    "P3": (110.6, 4.43, 3.69),
    "P4": (110.6, 4.43, 3.69),
    "P5": (221.3, 8.85, 7.39),
    "P6": (221.3, 8.85, 7.39),
}


def test_plan_tables_sections_5_2_and_7_3():
    got = {
        r.test: (round(r.prefill_bytes / 1e9, 1), round(r.extra_s, 2), round(r.extra_s_emulated, 2))
        for r in est.plan_table(S)
    }
    assert got == PAPER_PLAN


def test_tp_projection_section_10():
    rows = est.tp_projection(S, baseline_ttft=6.36)
    assert [round(100 * r.increase_bound) for r in rows] == [3, 8, 17, 31]


# Section 9: measured increase on the emulated link, TTFT at 200 Gb/s (Section 8.4), real-cable bound.
SECTION_9 = {
    "P1": (1024, 0.96, 1.1, 3.6),
    "P2": (8192, 6.36, 13.9, 16.9),
    "P3": (32768, 27.02, 13.1, 16.0),
    "P4": (32768, 23.00, 15.0, 18.3),
    "P5": (65536, 55.47, 12.6, 15.4),
    "P6": (65536, 45.82, 18.4, 21.8),
}


@pytest.mark.parametrize("test", sorted(SECTION_9))
def test_real_cable_section_9(test):
    tokens, ttft, measured, paper = SECTION_9[test]
    # the measured traffic was 3.54-3.60 MB per prompt token (Section 8.3)
    lo = est.real_cable(S, 3.54e6, tokens, ttft, measured / 100).real_cable_at_most * 100
    hi = est.real_cable(S, 3.60e6, tokens, ttft, measured / 100).real_cable_at_most * 100
    assert lo - 0.05 <= paper <= hi + 0.05
    assert 2.4 <= hi - measured <= 3.6  # "at most 2.5-3.5 percentage points"


def test_decode_section_4_2():
    d = est.decode(S)
    assert d.tokens_per_pass == 5
    assert round(d.allreduce_bytes / 1e3) == 61 and round(d.sent_per_allreduce / 1e3) == 108
    assert round(d.send_us_from, 1) == 4.3
    assert round(d.bytes_per_pass / 1e6) == 18
    assert round(d.weight_bytes_per_spark / 1e9, 1) == 2.8 and d.pass_floor_s >= 0.010
    assert 13.5 <= d.traffic_bound_gbps <= 14.5
    assert round(d.extra_per_pass_s * 1e3, 1) == 0.7


def test_measured_ttft_share():
    m = est.with_ttft(S, 8192, 6.36)
    assert round(m.network_share, 3) == 0.174 and m.increase_bound == pytest.approx(m.network_share)


def test_switch_sizing():
    assert est.switch_sizing(8) == {
        "200": est.SwitchChoice("CRS804", "2x200G per 400G port"),
        "100": est.SwitchChoice("CRS812", "4x100G per 400G port"),
    }
    assert est.switch_sizing(16)["100"].switch == "CRS804" and est.switch_sizing(16)["200"].switch is None
    assert est.switch_sizing(6)["200"].switch == "CRS812"


def test_config_json_fields(tmp_path):
    nested = {
        "model_type": "qwen3_vl_moe",
        "text_config": {
            "hidden_size": 4096,
            "num_hidden_layers": 94,
            "num_attention_heads": 64,
            "vocab_size": 151936,
            "mtp_num_hidden_layers": 1,
        },
    }
    f = tmp_path / "config.json"
    f.write_text(json.dumps(nested))
    spec = from_config(f)
    assert (spec.hidden, spec.layers, spec.heads, spec.mtp_layers) == (4096, 94, 64, 1)
    omni = {
        "thinker_config": {
            "text_config": {
                "hidden_size": 2048,
                "num_hidden_layers": 48,
                "num_attention_heads": 32,
                "num_nextn_predict_layers": 2,
            }
        }
    }
    f.write_text(json.dumps(omni))
    assert from_config(f).mtp_layers == 2
    split = est.Setup(from_config(f), tp=2, mtp_split=True)
    assert est.all_reduces_per_token(split) == 2 * 48 + 1 + 2 * 2 + 1


def test_cli_json_keys_are_stable(cli):
    res = cli("estimate", "--model", "glm-5.3", "--tp", "8", "--ttft", "6.36", "--format", "json")
    assert res.code == 0
    data = json.loads(res.out)
    assert set(data) == {
        "model",
        "tp",
        "from_gbps",
        "to_gbps",
        "emulated_gbps",
        "allreduces_per_token",
        "bytes_per_value",
        "ring_factor",
        "bytes_per_token",
        "extra_s_per_1000_tokens",
        "extra_s_per_1000_tokens_emulated",
        "real_cable_s_per_1000_tokens",
        "chunk",
        "plan",
        "decode",
        "tp_table",
        "switch",
        "measured",
        "tp_projection",
    }
    assert {r["test"] for r in data["plan"]} == {t.name for t in PLAN}


def test_cli_from_inventory(cli):
    res = cli("estimate", "--inventory", "inventory/ring4.yml", "--format", "json")
    assert res.code == 0 and json.loads(res.out)["tp"] == 4


@pytest.mark.parametrize(
    "args,message",
    [
        (["--tp", "6"], "TP 6 does not divide the 64 attention heads of glm-5.3"),
        (["--to", "0"], "argument --to: 0 is outside [0.1, 100000]"),
        (["--model", "gpt-9"], "unknown model preset 'gpt-9'"),
        (["--ttft", "0.5"], "baseline TTFT 0.5 s is shorter than sending the prefill"),
    ],
)
def test_bad_input_exit_2(cli, args, message):
    res = cli("estimate", *args)
    assert res.code == 2 and message in res.err and "Traceback" not in res.err


def test_config_missing_fields_exit_2(cli, tmp_path):
    f = tmp_path / "config.json"
    f.write_text(json.dumps({"hidden_size": 4096}))
    res = cli("estimate", "--config", str(f))
    assert res.code == 2
    assert "missing num_hidden_layers, num_attention_heads" in res.err


def test_plots_are_written(cli, tmp_path):
    res = cli("estimate", "--ttft", "6.36", "--plot", str(tmp_path))
    assert res.code == 0
    for name in ("penalty_vs_prompt.png", "penalty_vs_tp.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
