"""The report judges a difference between 200 and 100e against the run-to-run spread, and
prints a difference with its own sign."""

from __future__ import annotations

import pytest

from sparkfab.measure.bench.runs import dist
from sparkfab.measure.report.reporttext import _signed, verdict


def test_a_difference_inside_the_spread_is_noise_and_one_outside_is_not():
    at_200 = dist([1.20, 1.31, 1.25])
    assert verdict(at_200, dist([1.24, 1.28, 1.35])) == "within noise (the modes' ranges overlap)"
    assert verdict(at_200, dist([1.80, 1.86, 1.91])) == "outside the run-to-run spread"


def test_two_samples_make_no_spread():
    assert verdict(dist([1.2, 1.3]), dist([1.9, 2.0])) == "no verdict (n=2: at least 3 per mode)"
    assert verdict(dist([1.2, 1.3, 1.25]), None) == "-"


def test_a_decrease_is_printed_with_its_own_sign():
    assert _signed(-2.79) == "-2.79" and _signed(0.61) == "+0.61" and _signed(0.0) == "+0"


def test_a_cell_cannot_forge_a_row_or_a_section():
    """A model name or label read from a run file is text in the Markdown report: its pipes
    escaped, its line breaks spaces, and a huge value cut."""
    from sparkfab.measure.report.reporttext import MAX_CELL, _cell

    forged = "m\n\n## TTFT (forged)\n\n| test | r |\n|---|---|\n| P1 | 0.001 s (forged) |"
    cell = _cell(forged)
    assert "\n" not in cell and "| P1 |" not in cell and "\\| P1 \\|" in cell
    assert len(_cell("k=v, " * 100_000)) == MAX_CELL


def test_a_label_is_one_printable_line(cli, tmp_path):
    res = cli("bench", "--url", "http://127.0.0.1:9", "--model", "m", "--label", "a\n## forged", "-o", str(tmp_path))
    assert res.code == 2 and "--label" in res.err and "printable text on one line" in res.err


def test_the_ttft_axis_is_logarithmic_where_tests_span_more_than_ten_times():
    from sparkfab.measure.report import log_axis

    assert log_axis([1.2, 1.3, 98.0]) and not log_axis([1.2, 1.3, 9.0]) and not log_axis([])


def _run(tmp_path, label: str, lab: bool, per_token: float, requests: int):
    """A run of one test `D` (two rounds of `requests` requests, 11 tokens each) whose decode
    windows sent `per_token` bytes per output token."""
    from sparkfab.measure.bench.records import summarize
    from sparkfab.measure.bench.runs import SavedRun

    ms = 1_000_000
    rows = []
    for rnd in range(2):
        for i in range(requests):
            chunks = [[(10 + k) * ms, 1] for k in range(11)]
            rows.append(
                {
                    "test": "D", "round": rnd, "index": i, "prompt_tokens_planned": 100,
                    "output_tokens_planned": 11, "send_ns": 0, "first_ns": 10 * ms, "last_ns": 20 * ms,
                    "chunks": chunks, "prompt_tokens": 100, "completion_tokens": 11, "ttft_s": 0.01,
                    "decode_tps": 1000.0, "round_decode_bytes": per_token * 10 * requests,
                    "round_decode_tokens": 10 * requests,
                }
            )  # fmt: skip
    meta = {"inventory": {"lab": True, "tp": 8}} if lab else {"inventory": {"tp": 8}}
    return SavedRun(tmp_path / label, meta, rows, summarize(rows), label, 0)


def test_decode_traffic_per_output_token_against_the_estimate_of_its_transport(tmp_path):
    """The report's decode traffic per output token: measured per round, against the lab engine's
    Gloo estimate for a lab run and the NCCL pass for a Spark's, at the test's batch."""
    from dataclasses import replace

    from sparkfab.measure.estimate import Setup, decode
    from sparkfab.measure.estimate.gloo import gloo_view
    from sparkfab.measure.estimate.model import preset
    from sparkfab.measure.report import tables
    from sparkfab.measure.report.reporttext import sections

    setup = Setup(preset("glm-5.3"), 8)
    for lab, requests in ((True, 1), (False, 4)):
        at = replace(setup, batch=requests)
        want = gloo_view(at).decode_bytes_per_token if lab else decode(at).bytes_per_pass / decode(at).tokens_per_pass
        a, b = _run(tmp_path, "200", lab, want, requests), _run(tmp_path, "100e", lab, 1.1 * want, requests)
        (row,) = tables(a, b, setup)["decode_bytes_per_token"]
        assert row["estimate"] == want and row["a"]["mean"] == want and row["b"]["n"] == 2
        (section,) = [s for s in sections(tables(a, b, setup), "200", "100e") if s.title.startswith("Decode traffic")]
        assert section.rows[0][-1] == "+0.00% / +10.00%"


def _prefill_run(tmp_path, label: str, lab: bool, per_token: float, tokens: int):
    """A run of one test `P` (three rounds of one request of `tokens` prompt tokens) whose
    prefill windows sent `per_token` bytes per prompt token."""
    from sparkfab.measure.bench.records import summarize
    from sparkfab.measure.bench.runs import SavedRun

    ms = 1_000_000
    rows = [
        {
            "test": "P", "round": rnd, "index": 0, "prompt_tokens_planned": tokens, "output_tokens_planned": 2,
            "send_ns": 0, "first_ns": 10 * ms, "last_ns": 11 * ms, "chunks": [[10 * ms, 1], [11 * ms, 1]],
            "prompt_tokens": tokens, "completion_tokens": 2, "ttft_s": 0.01, "decode_tps": 1000.0,
            "round_prefill_bytes": per_token * tokens,
        }
        for rnd in range(3)
    ]  # fmt: skip
    meta = {"inventory": {"lab": True, "tp": 8}} if lab else {"inventory": {"tp": 8}}
    return SavedRun(tmp_path / label, meta, rows, summarize(rows), label, 0)


def test_a_short_prompts_prefill_traffic_against_the_lab_engines_gloo_estimate(tmp_path):
    """A 128-token prompt at TP8 in the lab sends about 3 % more per token than the paper's
    formula (the switch8 main job: +3.6 %): Gloo's bytes per ring step and the all-gather of the
    first token's scores, which the lab engine's estimate counts; a lab run's report shows it
    beside the paper's, a Spark's run (NCCL) does not."""
    from sparkfab.lab.serving import model_shape
    from sparkfab.measure.estimate import Setup, bytes_per_token
    from sparkfab.measure.estimate.gloo import GLOO_PAYLOAD_OVERHEAD, gloo_prefill_bytes_per_token
    from sparkfab.measure.estimate.model import ModelSpec
    from sparkfab.measure.report import tables
    from sparkfab.measure.report.reporttext import sections

    shape = model_shape({8})
    lab_model = ModelSpec("lab", shape["hidden"], shape["layers"], shape["vocab"], shape["heads"])
    setup = Setup(lab_model, 8)
    paper, gloo = bytes_per_token(setup), gloo_prefill_bytes_per_token(setup, 128)
    headers = 1 + GLOO_PAYLOAD_OVERHEAD  # a header on every frame, whatever the prompt
    assert 0.02 < gloo / (paper * headers) - 1 < 0.035  # the fixed part of one pass over 128 tokens
    assert gloo_prefill_bytes_per_token(setup, 8192) / (paper * headers) - 1 < 0.005  # lost in a long prompt
    a, b = _prefill_run(tmp_path, "200", True, gloo, 128), _prefill_run(tmp_path, "100e", True, 1.01 * gloo, 128)
    (row,) = tables(a, b, setup)["bytes_per_token"]
    assert row["estimate"] == paper and row["gloo"] == gloo
    (section,) = [s for s in sections(tables(a, b, setup), "200", "100e") if s.title.startswith("Prefill traffic")]
    assert section.columns[-2:] == ["Gloo estimate", "measured vs Gloo"]
    assert section.rows[0][-1] == "+0.00% / +1.00%"
    spark = _prefill_run(tmp_path, "spark", False, paper, 128)
    (row,) = tables(spark, None, setup)["bytes_per_token"]
    assert "gloo" not in row
    (section,) = [s for s in sections(tables(spark, None, setup), "200", None) if s.title.startswith("Prefill")]
    assert section.columns[-1] == "measured vs estimate"


def test_a_ttft_increase_is_judged_against_the_spread_then_the_bound():
    from sparkfab.measure.report.reporttext import ttft_verdict

    at_200 = dist([1.00, 1.02, 1.01, 0.99, 1.00])
    at_100 = dist([1.30, 1.31, 1.29, 1.30, 1.32])  # +0.30 s, its p10-p90 range about 0.28..0.32 s

    def row(b, bound):
        return {"a": at_200, "b": b, "increase_s": b["mean"] - at_200["mean"], "bound_s": bound}

    assert ttft_verdict(row(at_100, 0.40)).startswith("within the bound: 0.75x (increase +0.3 s, p10-p90 range +0.27")
    assert ttft_verdict(row(at_100, 0.80)).startswith("within the bound (below half of it): 0.38x")
    assert ttft_verdict(row(at_100, 0.20)).startswith("above the bound: 1.50x")
    assert ttft_verdict(row(at_100, 0.30)).startswith("at the bound: 1.00x")
    overlapping = dist([1.00, 1.03, 1.01, 1.02, 1.00])
    assert ttft_verdict(row(overlapping, 0.3)) == "within noise (the modes' ranges overlap)"
    assert ttft_verdict(row(dist([1.3, 1.31]), 0.3)) == "no verdict (n=2: at least 3 per mode)"
    assert ttft_verdict({**row(at_100, 0.3), "bound_s": None}) == "outside the run-to-run spread"


def test_a_lab_runs_bound_counts_the_bytes_its_link_carries(tmp_path):
    """In the lab the bound is the time of the Gloo bytes the link carries (fixed bytes per ring
    step, headers, the first token's pass: what the sampler counts and the shaper accounts), not
    the paper's NCCL payload; a Spark's run keeps the paper's."""
    from sparkfab.lab.serving import model_shape
    from sparkfab.measure.estimate import Setup, bytes_per_token, extra_time
    from sparkfab.measure.estimate.gloo import gloo_prefill_bytes_per_token
    from sparkfab.measure.estimate.model import ModelSpec
    from sparkfab.measure.report import tables

    shape = model_shape({8})
    setup = Setup(ModelSpec("lab", shape["hidden"], shape["layers"], shape["vocab"], shape["heads"]), 8)
    gloo = gloo_prefill_bytes_per_token(setup, 128)
    a, b = _prefill_run(tmp_path, "200", True, gloo, 128), _prefill_run(tmp_path, "100e", True, gloo, 128)
    (row,) = tables(a, b, setup)["ttft"]
    assert row["bound_bytes_per_token"] == gloo > bytes_per_token(setup)
    assert row["bound_s"] == extra_time(128 * gloo, _gbps(a, 0), _gbps(b, 1))
    spark_a, spark_b = (_prefill_run(tmp_path, n, False, gloo, 128) for n in ("s200", "s100e"))
    (row,) = tables(spark_a, spark_b, setup)["ttft"]
    assert row["bound_bytes_per_token"] == bytes_per_token(setup)


def test_an_increase_is_split_into_the_bytes_time_and_the_rest(tmp_path):
    """The verdict says how much of the increase the link's measured bytes take at the two rates
    and how much the rest of TTFT changed (the main job's L4 at 7e51f4e: +0.0404 s and +0.0345
    s of +0.0749 s), so that an increase above the bound names where it lies."""
    from sparkfab.measure.bench.records import summarize
    from sparkfab.measure.bench.runs import SavedRun
    from sparkfab.measure.report import tables

    def run(label, ttfts, per_token):
        rows = [
            {
                "test": "P", "round": i, "index": 0, "prompt_tokens_planned": 1000, "output_tokens_planned": 2,
                "send_ns": 0, "first_ns": int(t * 1e9), "last_ns": int(t * 1e9) + 1, "prompt_tokens": 1000,
                "completion_tokens": 2, "ttft_s": t, "decode_tps": 10.0, "round_prefill_bytes": per_token * 1000,
                "chunks": [[int(t * 1e9), 1], [int(t * 1e9) + 1, 1]],
            }
            for i, t in enumerate(ttfts)
        ]  # fmt: skip
        meta = {"inventory": {"lab": True, "tp": 2, "link_gbps": 0.4 if label == "200" else 0.2}}
        return SavedRun(tmp_path / label, meta, rows, summarize(rows), label, 0)

    # 10 kB per token, 1,000 tokens: 0.2 s of the link at 0.4 Gb/s, 0.4 s at 0.2 Gb/s
    a = run("200", [1.00, 1.01, 0.99, 1.00, 1.00], 10_000)
    b = run("100e", [1.30, 1.31, 1.29, 1.30, 1.30], 10_000)
    (row,) = tables(a, b, None)["ttft"]
    assert row["wire_s"] == pytest.approx({"a": 0.2, "b": 0.4})
    assert row["rest_s"]["b"] - row["rest_s"]["a"] == pytest.approx(0.1)  # 0.3 s more, 0.2 s of it the bytes
    row["bound_s"] = 0.2
    from sparkfab.measure.report.reporttext import ttft_verdict

    said = ttft_verdict(row)
    assert said.startswith("above the bound: 1.50x")
    assert "the measured bytes at the two rates +0.2 s, the rest of TTFT +0.1 s" in said


def _gbps(run, position):
    from sparkfab.measure.bench.runs import link_gbps

    return link_gbps(run, position)


def test_decode_traffic_received_beside_sent_names_what_only_the_host_sends(tmp_path):
    """The collectives send and receive alike; the engine head also broadcasts each step's
    scheduler output to its workers (vLLM's multi-node executor), which it only sends: the
    report shows what the host received and sent less received per output token."""
    from dataclasses import replace

    from sparkfab.measure.bench.records import summarize
    from sparkfab.measure.bench.runs import SavedRun
    from sparkfab.measure.estimate import Setup
    from sparkfab.measure.estimate.gloo import gloo_view
    from sparkfab.measure.estimate.model import preset
    from sparkfab.measure.report import tables
    from sparkfab.measure.report.reporttext import sections

    setup = Setup(preset("glm-5.3"), 4)
    want = gloo_view(replace(setup, batch=1)).decode_bytes_per_token

    def run(label: str) -> SavedRun:
        ms = 1_000_000
        rows = [
            {
                "test": "D", "round": rnd, "index": 0, "prompt_tokens_planned": 100, "output_tokens_planned": 11,
                "send_ns": 0, "first_ns": 10 * ms, "last_ns": 20 * ms,
                "chunks": [[(10 + k) * ms, 1] for k in range(11)],
                "prompt_tokens": 100, "completion_tokens": 11, "ttft_s": 0.01, "decode_tps": 1000.0,
                "round_decode_bytes": (want + 3400) * 10, "round_decode_rx_bytes": want * 10,
                "round_decode_tokens": 10,
            }
            for rnd in range(3)
        ]  # fmt: skip
        return SavedRun(tmp_path / label, {"inventory": {"lab": True, "tp": 4}}, rows, summarize(rows), label, 0)

    t = tables(run("200"), run("100e"), setup)
    (row,) = t["decode_bytes_per_token"]
    assert row["a_rx"]["mean"] == want and row["a"]["mean"] == want + 3400
    (section,) = [s for s in sections(t, "200", "100e") if s.title.startswith("Decode traffic")]
    cells = dict(zip(section.columns, section.rows[0], strict=True))
    assert cells["received vs estimate"] == "+0.00% / +0.00%"
    assert cells["sent - received"] == "+0.0034 MB / +0.0034 MB"  # the table's unit: MB at GLM's size


def test_the_rounds_row_says_which_tests_were_warmed_up_for_runs_of_every_version():
    """run.json names the warmed tests since #59 (a list; one name between 78cbf43 and c71805f);
    an older run warmed up before every test."""
    from sparkfab.measure.report.reporttext import _warmup

    assert _warmup({"warmup": 1, "warmup_of": ["L1", "L2"]}) == "1 warm-up before L1, L2"
    assert _warmup({"warmup": 1, "warmup_of": "L1"}) == "1 warm-up before L1"
    assert _warmup({"warmup": 2}) == "2 warm-up each"
    assert _warmup({"warmup": 0, "warmup_of": []}) == "0 warm-up"
