"""vLLM's own figures (`measure.bench.vllmstats`): percentiles as numpy computes them, and
/metrics read as Prometheus's parser reads it."""

from __future__ import annotations

import pytest


def test_percentiles_match_numpy():
    np = pytest.importorskip("numpy")
    from sparkfab.measure.bench.vllmstats import describe, percentile

    xs = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 1.5]
    for p in (0, 50, 90, 95, 99, 100):
        assert percentile(xs, p) == pytest.approx(float(np.percentile(xs, p)))
    d = describe("ttft", xs)
    assert d["std_ttft_ms"] == pytest.approx(float(np.std(xs)) * 1000)
    assert d["median_ttft_ms"] == pytest.approx(float(np.median(xs)) * 1000)


def test_prometheus_histograms_are_summed_over_labels():
    from sparkfab.measure.bench.vllmstats import parse_prometheus, server_side

    before = parse_prometheus('vllm:time_to_first_token_seconds_sum{model_name="m",engine="0"} 1.0\n')
    after = parse_prometheus(
        "# HELP vllm:time_to_first_token_seconds x\n"
        'vllm:time_to_first_token_seconds_sum{model_name="m",engine="0"} 1.5\n'
        'vllm:time_to_first_token_seconds_sum{model_name="m",engine="1"} 0.5\n'
        'vllm:time_to_first_token_seconds_count{model_name="m",engine="0"} 4\n'
        'vllm:time_to_first_token_seconds_bucket{le="0.1"} 2\n'
    )
    assert server_side(before, after) == {"server_mean_ttft_ms": 250.0, "server_count_ttft": 4}


def test_metrics_are_read_as_prometheus_reads_them():
    """Label values with braces, quotes and escapes, TYPE lines and timestamps: the sample is
    what Prometheus's parser says (a regex lost the first and took the second's `}` as the
    end); a body that is not the exposition format gives no figures rather than an error."""
    from sparkfab.measure.bench.vllmstats import parse_prometheus

    text = (
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        'vllm:e2e_request_latency_seconds_sum{model_name="a}b \\"q\\" c\\\\",engine="0"} 2.5 1700000000000\n'
        'vllm:e2e_request_latency_seconds_count{model_name="a}b \\"q\\" c\\\\",engine="0"} 5\n'
        'vllm:e2e_request_latency_seconds_bucket{model_name="x",le="+Inf"} 5\n'
        "vllm:num_requests_running 1\n"
    )
    assert parse_prometheus(text) == {
        "vllm:e2e_request_latency_seconds_sum": 2.5,
        "vllm:e2e_request_latency_seconds_count": 5.0,
    }
    assert parse_prometheus("<html>not metrics</html>\n") == {}
