"""Bench and battery over https with an API key, and results in the terms of
`vllm bench serve` and vLLM's /metrics (against the protocol double)."""

from __future__ import annotations

import datetime
import ipaddress
import json
from pathlib import Path

import pytest

from tests.helpers.bench import VLLM_KEYS, bench, plan


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1, made here."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("tls")
    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("sparkfab test CA"))
        .issuer_name(name("sparkfab test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(ca_key, hashes.SHA256())
    )
    files = {"ca": d / "ca.pem", "cert": d / "cert.pem", "key": d / "key.pem"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return files


def _tls_double(double, tls_files, *extra: str) -> str:
    url = double(
        "--token-interval-s", "0.002", "--tls-cert", str(tls_files["cert"]), "--tls-key", str(tls_files["key"]), *extra
    )
    assert url.startswith("https://")
    return url


def test_https_with_a_ca_and_an_api_key(double, cli, tmp_path, tls_files, monkeypatch):
    url = _tls_double(double, tls_files, "--api-key", "k-123")
    monkeypatch.setenv("SPARKFAB_TEST_KEY", "k-123")
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 40, "output_tokens": 6}])
    res = bench(
        cli, url, p, "--rounds", "1", "--warmup", "0", "--idle-seconds", "0", "-o", str(tmp_path / "run"),
        "--api-key-env", "SPARKFAB_TEST_KEY", "--ca-file", str(tls_files["ca"]),
    )  # fmt: skip
    assert res.code == 0, res.err
    rows = [json.loads(x) for x in (tmp_path / "run/requests.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["error"] is None for r in rows)
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert "k-123" not in json.dumps(meta) and "k-123" not in (tmp_path / "run/requests.jsonl").read_text()


def test_the_certificate_is_checked_unless_told_not_to(double, cli, tmp_path, tls_files):
    url = _tls_double(double, tls_files)
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 20, "output_tokens": 4}])
    common = ("--rounds", "1", "--warmup", "0", "--idle-seconds", "0")
    res = bench(cli, url, p, *common, "-o", str(tmp_path / "a"))
    assert res.code == 5 and "CERTIFICATE_VERIFY_FAILED" in res.err.upper().replace(" ", "_"), res.err
    assert "give its CA with --ca-file PEM (or --insecure)" in res.err, res.err
    plain = bench(cli, url.replace("https://", "http://"), p, *common, "-o", str(tmp_path / "c"))
    assert plain.code == 5 and "use https://" in plain.err, plain.err
    ok = bench(cli, url, p, *common, "--insecure", "-o", str(tmp_path / "b"))
    assert ok.code == 0, ok.err


def test_a_wrong_or_missing_key_is_named(double, cli, tmp_path, monkeypatch):
    url = double("--token-interval-s", "0.001", "--api-key", "right")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 20, "output_tokens": 4}])
    common = ("--rounds", "1", "--warmup", "0", "--idle-seconds", "0")
    monkeypatch.setenv("SPARKFAB_TEST_KEY", "wrong")
    res = bench(cli, url, p, *common, "--api-key-env", "SPARKFAB_TEST_KEY", "-o", str(tmp_path / "a"))
    assert res.code == 5 and "401 (the server wants an API key: name the variable" in res.err, res.err
    # without --api-key-env the key is OPENAI_API_KEY's, as vLLM's own benchmark takes it
    monkeypatch.setenv("OPENAI_API_KEY", "right")
    assert bench(cli, url, p, *common, "-o", str(tmp_path / "d")).code == 0
    monkeypatch.delenv("OPENAI_API_KEY")
    missing = bench(cli, url, p, *common, "--api-key-env", "SPARKFAB_NOT_SET_ANYWHERE", "-o", str(tmp_path / "b"))
    assert missing.code == 2 and "SPARKFAB_NOT_SET_ANYWHERE" in missing.err
    key = ("--api-key-env", "SPARKFAB_TEST_KEY")
    battery = cli("battery", "--url", url, "--model", "fake-model", "--checks", "count", *key)
    assert battery.code == 4 and "401" in battery.out and "--api-key-env" in battery.out


def test_battery_over_https_with_the_key(double, cli, tls_files, monkeypatch):
    url = _tls_double(double, tls_files, "--api-key", "k-9")
    monkeypatch.setenv("SPARKFAB_TEST_KEY", "k-9")
    res = cli(
        "battery", "--url", url, "--model", "fake-model", "--checks", "count,hangul",
        "--api-key-env", "SPARKFAB_TEST_KEY", "--ca-file", str(tls_files["ca"]),
    )  # fmt: skip
    assert res.code == 0, res.out + res.err


def test_results_in_vllm_bench_serve_terms_with_the_servers_view(double, cli, tmp_path):
    url = double("--token-interval-s", "0.004", "--prefill-s-per-token", "0.0001")
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 200, "output_tokens": 30}])
    res = bench(cli, url, p, "--rounds", "3", "--warmup", "1", "--idle-seconds", "0", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    doc = json.loads((tmp_path / "run/result_x.json").read_text())
    assert set(doc) >= VLLM_KEYS, sorted(VLLM_KEYS - set(doc))
    assert doc["completed"] == 6 and doc["failed"] == 0 and doc["num_prompts"] == 6
    assert doc["total_output_tokens"] == 180 and len(doc["ttfts"]) == 6
    # the double sends a token every 4 ms: client and server see the same cadence
    assert doc["mean_itl_ms"] == pytest.approx(4.0, rel=0.25)
    assert doc["mean_tpot_ms"] == pytest.approx(4.0, rel=0.25)
    assert doc["p50_ttft_ms"] <= doc["p90_ttft_ms"] <= doc["p99_ttft_ms"]
    # the server's own view, from /metrics around the measured rounds (warm-up excluded)
    assert doc["server_count_ttft"] == 6
    assert doc["server_mean_itl_ms"] == pytest.approx(4.0, rel=0.05)
    assert doc["server_mean_ttft_ms"] == pytest.approx(doc["mean_ttft_ms"], rel=0.5)
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert meta["engine"] == {"name": "vllm", "version": "0.32.0"} and meta["sparkfab_version"]
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["tests"]["x"]["vllm"]["mean_tpot_ms"] == doc["mean_tpot_ms"]
    # the console block in vllm bench serve's layout (vllm/benchmarks/serve.py: 50 columns, labels
    # in 40, two decimals), with the figures of result_x.json
    lines = res.out.splitlines()
    at = lines.index("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    block = lines[at : lines.index("=" * 50, at) + 1]
    assert "{:<40} {:<10}".format("Successful requests:", 6) in block
    for key, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL")):
        for stat, word in (("mean", "Mean"), ("median", "Median"), ("p99", "P99")):
            assert "{:<40} {:<10.2f}".format(f"{word} {name} (ms):", doc[f"{stat}_{key}_ms"]) in block, (key, stat)
    server = doc["mean_ttft_ms"] - doc["server_mean_ttft_ms"]
    assert "{:<40} {:<10.2f}".format("Client - server TTFT (ms):", server) in block


def test_an_sglang_server_is_named_and_its_histograms_read(double, cli, tmp_path):
    """SGLang answers its version at /server_info and names its histograms sglang:...: bench
    finds the engine through the engine seam and reads the server's own view from them."""
    url = double("--dialect", "sglang", "--version", "0.5.23", "--token-interval-s", "0.004")
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 100, "output_tokens": 20}])
    res = bench(cli, url, p, "--rounds", "2", "--warmup", "0", "--idle-seconds", "0", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert meta["engine"] == {"name": "sglang", "version": "0.5.23"}
    doc = json.loads((tmp_path / "run/result_x.json").read_text())
    assert doc["server_count_ttft"] == 4 and doc["server_mean_itl_ms"] == pytest.approx(4.0, rel=0.05)
    assert "server_mean_prefill_ms" not in doc  # SGLang has no prefill histogram


def test_the_report_shows_vllms_percentiles_and_the_time_outside_the_server(double, cli, tmp_path):
    """report: p50/p99 of TTFT, TPOT, ITL and E2EL per test and run, the server's mean TTFT and the
    client's minus the server's; an HTML page with header cells, captions, and a label that is text."""
    url = double("--token-interval-s", "0.004", "--prefill-s-per-token", "0.0001")
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 200, "output_tokens": 30}])
    label = "<b>run</b>"
    res = bench(
        cli,
        url,
        p,
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--idle-seconds",
        "0",
        "--label",
        label,
        "-o",
        str(tmp_path / "run"),
    )
    assert res.code == 0, res.err
    rep = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"))
    assert rep.code == 0, rep.err
    doc = json.loads((tmp_path / "run/result_x.json").read_text())
    [row] = json.loads((tmp_path / "rep/tables.json").read_text())["latency"]
    assert row["p99_itl_ms"] == pytest.approx(doc["p99_itl_ms"]) and row["p50_e2el_ms"] == pytest.approx(
        doc["p50_e2el_ms"]
    )
    # the double's server histogram starts at arrival: client minus server is the time outside it
    assert row["client_minus_server_ttft_ms"] == pytest.approx(doc["mean_ttft_ms"] - doc["server_mean_ttft_ms"])
    assert -5 < row["client_minus_server_ttft_ms"] < 50
    # throughput under vllm bench serve's own keys, equal to its result file's
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert row[key] == pytest.approx(doc[key]) and doc[key] > 0
    md = (tmp_path / "rep/report.md").read_text()
    assert (
        "| test | run | requests/s | output tok/s | total tok/s | TTFT p50 / p99 | TPOT p50 / p99 | ITL p50 / p99 |"
        " E2EL p50 / p99 |" in md
    )
    page = (tmp_path / "rep/report.html").read_text()
    assert '<th scope="col">TTFT p50 / p99</th>' in page and '<th scope="row">x</th>' in page
    assert "<figcaption>Time to first token of each round, per test and run</figcaption>" in page
    assert "<b>run</b>" not in page and "&lt;b&gt;run&lt;/b&gt;" in page


def test_a_proxy_in_the_environment_is_not_used(double, cli, tmp_path, monkeypatch):
    """bench and battery reach the server directly, the probe as the timed requests: a dead proxy
    in the environment changes nothing (one policy for both clients)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    url = double("--token-interval-s", "0.001")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 50, "output_tokens": 10}])
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "--idle-seconds", "0", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert meta["engine"]["name"] == "vllm"  # the probe reached the server, not the proxy
    res = cli("battery", "--url", url, "--model", "fake-model", "--checks", "count")
    assert res.code == 0, res.out + res.err


def test_an_increase_far_above_the_estimates_bound_is_flagged():
    from sparkfab.measure.report.reporttext import sections

    def row(test: str, increase: float) -> dict:
        d = {"mean": 1.0, "p10": 1.0, "median": 1.0, "p90": 1.0, "min": 1.0, "max": 1.0, "n": 3}
        return {"test": test, "a": d, "b": d, "increase_s": increase, "increase": increase, "bound_s": 0.5}

    t = {"ttft": [row("near", 0.9), row("far", 1.6)], "decode": [], "bytes_per_token": []}
    [ttft] = [s for s in sections(t, "200", "100e") if s.title.startswith("TTFT")]
    cells = {r[0]: r[-1] for r in ttft.rows}
    assert cells["near"] == "<= +0.5 s"
    assert cells["far"] == "<= +0.5 s (measured 3.2x the bound: more than the network explains)"


def test_report_estimate_reads_the_served_models_config(cli, tmp_path):
    """A run whose model is a local checkpoint is estimated from that checkpoint's config.json."""
    from tests.helpers.bench import run_dir_files

    model = tmp_path / "ckpt"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"model_type": "tiny", "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 16})
    )
    files = run_dir_files("a", meta={"url": "http://x", "model": str(model), "label": "200", "plan": []})
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    res = cli("report", str(tmp_path / "a"), "--estimate", "--tp", "2", "-o", str(tmp_path / "rep"))
    assert res.code == 0, res.err
    assert f"estimate: tiny (--config {model}/config.json: hidden 1024, 2 layers) at TP2" in res.err


def test_a_servers_word_about_a_local_path_is_kept_as_text_never_followed(double, cli, tmp_path):
    """A bare URL's server names where it loaded its model from: run.json keeps that text, but
    nothing at that path on this machine is read or copied into the run (it is the serving host's
    path: read there through the inventory's connection, `Run._keep_model_config`)."""
    model = tmp_path / "ckpt"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "tiny", "secret": "not to be copied"}))
    url = double("--token-interval-s", "0.001", "--root", str(model))
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 20, "output_tokens": 4}])
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "--idle-seconds", "0", "-o", str(tmp_path / "a"))
    assert res.code == 0, res.err
    assert json.loads((tmp_path / "a/run.json").read_text())["engine"]["model_root"] == str(model)
    assert not (tmp_path / "a/model-config.json").exists()
    assert "not to be copied" not in "".join(f.read_text() for f in (tmp_path / "a").iterdir() if f.is_file())
