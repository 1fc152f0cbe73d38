"""The benchmark driver, the quality battery and the report, against the streaming
protocol double (run in its own process, as a real server would be)."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, start_double
from tests.helpers.bench import bench, measured_rows, plan


def _timing_misses(double, cli, tmp: Path, chunk: int) -> list[str]:
    """Run the plan once against a fresh double; return every bound it misses (empty: all met)."""
    prefill, interval, n = 25e-6, 0.003, 120
    url = double(
        "--prefill-s-per-token", str(prefill), "--token-interval-s", str(interval), "--tokens-per-chunk", str(chunk)
    )
    p = plan(
        tmp,
        [
            {"name": "one", "requests": 1, "prompt_tokens": 800, "output_tokens": n},
            {"name": "four", "requests": 4, "prompt_tokens": 400, "output_tokens": n},
        ],
    )
    res = bench(cli, url, p, "--rounds", "3", "-o", str(tmp / "run"))
    assert res.code == 0, res.err
    rows = measured_rows(tmp / "run")
    chunks = -(-n // chunk)
    want_decode = (n - 1) / ((chunks - 1) * chunk * interval)
    misses = []
    # one stream: within 1 %; four at once share two cores with the double that times them, and the
    # double's own sends drift by about 1.5 % there (seen in CI): 3 %
    for test, tokens, bound in (("one", 800, 0.01), ("four", 400, 0.03)):
        mine = [r for r in rows if r["test"] == test]
        # the client stamps each first token within 1 ms of the moment the server sent it
        lag = statistics.median((r["first_ns"] - r["server_first_ns"]) / 1e9 for r in mine)
        if not 0 <= lag < 0.001:
            misses.append(f"{test}: first-token lag {lag * 1e3:.2f} ms")
        # and the TTFT it reports is what the server was told (the double times prefill from the
        # kernel's receive stamp, so four requests arriving together are timed as they arrived)
        ttft = statistics.median(r["ttft_s"] for r in mine)
        if abs(ttft - tokens * prefill) >= 0.001:
            misses.append(f"{test}: TTFT {ttft * 1e3:.2f} ms, told {tokens * prefill * 1e3:.2f} ms")
        for r in mine:
            if abs(r["decode_tps"] / want_decode - 1) >= bound:
                misses.append(f"{test}: decode {r['decode_tps']:.1f} tok/s, told {want_decode:.1f}")
            assert r["completion_tokens"] == n and r["prompt_tokens"] == tokens
            assert sum(t for _, t in r["chunks"]) == n and len(r["chunks"]) == chunks
    summary = json.loads((tmp / "run/summary.json").read_text())
    four = summary["tests"]["four"]
    assert four["last_first_token_s"]["n"] == 3 and len(four["first_token_order"]) == 3
    assert sorted(four["first_token_order"][0]) == [0, 1, 2, 3]
    return misses


@pytest.mark.timing  # wall-clock bounds: a loaded machine misses them without a bug
@pytest.mark.parametrize("chunk", [1, 3])
def test_timing_is_measured_as_programmed(double, cli, tmp_path, chunk):
    """TTFT within 1 ms and decode speed within 1 % of what the server was told for one request (3 %
    for four at once).
    Timing on a shared two-core machine: a first measurement that misses is repeated once, and the
    second must meet every bound."""
    misses = _timing_misses(double, cli, tmp_path / "a", chunk)
    if misses:
        misses = _timing_misses(double, cli, tmp_path / "b", chunk)
    assert not misses, misses


def test_short_answers_are_rejected_loudly(double, cli, tmp_path):
    url = double("--drop-tokens", "3", "--token-interval-s", "0.001")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 100, "output_tokens": 50}])
    res = bench(
        cli,
        url,
        p,
        "--rounds",
        "1",
        "--warmup",
        "0",
        "-o",
        str(tmp_path / "run"),
    )
    assert res.code == 5 and "{:<40} {:<10}".format("Failed requests:", 1) in res.out.splitlines()
    assert measured_rows(tmp_path / "run")[0]["error"] == "rejected: output 47 tokens, planned 50"


def test_an_error_the_server_streams_is_recorded_with_its_reason(double, cli, tmp_path):
    """vLLM ends a request that fails mid-way with an error chunk (its ErrorResponse): the
    request is a failure with the server's reason, not a short answer."""
    url = double("--error-after", "5", "--token-interval-s", "0.001")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 100, "output_tokens": 50}])
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "-o", str(tmp_path / "run"))
    assert res.code == 5 and "the engine died mid-stream" in res.err, res.err
    row = measured_rows(tmp_path / "run")[0]
    assert row["error"] == "server error in the stream: InternalServerError 500: the engine died mid-stream"


def test_server_down_at_the_start_is_named(cli, tmp_path):
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 10, "output_tokens": 5}])
    res = bench(cli, "http://127.0.0.1:9", p, "--rounds", "2", "--warmup", "0", "-o", str(tmp_path / "run"), model="m")
    assert res.code == 5 and "cannot reach http://127.0.0.1:9: ConnectError" in res.err, res.err
    assert "Traceback" not in res.err


def test_server_lost_mid_run_is_recorded_and_the_run_goes_on(tmp_path):
    proc, url = start_double("--token-interval-s", "0.002")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 50, "output_tokens": 30}])
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "sparkfab", "bench", "--url", url, "--model", "fake-model", "--plan", p]
    driver = subprocess.Popen([*cmd, "--rounds", "8", "--warmup", "0", "-q", "-o", str(run)], cwd=REPO)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        (run / "requests.jsonl").exists() and len((run / "requests.jsonl").read_text().splitlines()) >= 2
    ):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert driver.wait(timeout=60) == 5
    rows = measured_rows(run)
    assert [r["round"] for r in rows] == list(range(8))  # every round has its record
    ok = [r for r in rows if r["error"] is None]
    lost = [r for r in rows if r["error"] is not None]
    assert len(ok) >= 2 and len(lost) >= 5, [r["error"] for r in rows]
    assert all(r["completion_tokens"] == 30 for r in ok)
    assert all(any(w in r["error"] for w in ("Connection", "Errno", "IncompleteRead")) for r in lost), lost


def test_killing_the_driver_keeps_every_finished_request(double, tmp_path):
    url = double("--token-interval-s", "0.005")
    p = plan(tmp_path, [{"name": "slow", "requests": 1, "prompt_tokens": 50, "output_tokens": 40}])
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparkfab",
            "bench",
            "--url",
            url,
            "--model",
            "fake-model",
            "--plan",
            p,
            "--rounds",
            "50",
            "--warmup",
            "0",
            "-q",
            "-o",
            str(run),
        ],
        cwd=REPO,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (run / "requests.jsonl").exists() and len((run / "requests.jsonl").read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    lines = (run / "requests.jsonl").read_text().splitlines()
    assert len(lines) >= 3 and (run / "requests.jsonl").read_text().endswith("\n")
    records = [json.loads(x) for x in lines]  # every line is a whole record
    assert all(r["completion_tokens"] == 40 and r["error"] is None for r in records)
    assert [r["round"] for r in records] == list(range(len(records)))


def test_traffic_windows_with_counters(double, cli, tmp_path):
    from tests.doubles.sysfs import fake_tree

    fake_tree(tmp_path / "sys", ["rocep1s0f1", "roceP2p1s0f1"])
    url = double("--prefill-s-per-token", "1e-4", "--token-interval-s", "0.002")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 500, "output_tokens": 30}])
    counters = ("--counters", "rocep1s0f1,roceP2p1s0f1", "--root", str(tmp_path / "sys"))
    res = bench(
        cli,
        url,
        p,
        "--rounds",
        "1",
        "--warmup",
        "0",
        *counters,
        "--idle-seconds",
        "0.2",
        "--link-speed",
        "100e",
        "-o",
        str(tmp_path / "run"),
    )
    assert res.code == 0, res.err
    # the mode measured is recorded with its rate, for the report (which never reads the label)
    assert json.loads((tmp_path / "run/run.json").read_text())["link"] == {"link_speed": "100e", "link_gbps": 109.0}
    row = measured_rows(tmp_path / "run")[0]
    assert row["traffic_file"] == "x-r0.smp" and row["prefill_bytes"] == 0 and row["decode_bytes"] == 0
    assert (tmp_path / "run/traffic/x-r0.smp").stat().st_size > 0


def test_battery_passes_a_good_model_and_names_what_breaks(double, cli):
    good = double("--cached-prefix-factor", "0.1", "--prefill-s-per-token", "2e-6", "--token-interval-s", "0.0005")
    res = cli("battery", "--url", good, "--model", "fake-model", "--format", "json")
    checks = {c["name"]: c for c in json.loads(res.out)}
    assert res.code == 0 and all(c["passed"] for c in checks.values()), checks
    assert checks["tools"]["evidence"] == 'get_weather({"city": "Istanbul"})'
    bad = double("--behaviour", "broken", "--prefill-s-per-token", "2e-6", "--token-interval-s", "0.0005")
    res = cli("battery", "--url", bad, "--model", "fake-model", "--format", "json")
    checks = {c["name"]: c for c in json.loads(res.out)}
    assert res.code == 4 and not any(c["passed"] for c in checks.values())
    assert checks["count"]["evidence"] == "99 numbers; first difference at position 57: '58' instead of '57'"
    assert checks["hangul"]["evidence"] == "3 replacement characters over 3 passes"


@pytest.mark.timing  # the two runs differ by their measured prefill time
def test_report_two_runs(double, cli, tmp_path):
    p = plan(
        tmp_path,
        [
            {"name": "P2", "requests": 1, "prompt_tokens": 2000, "output_tokens": 20},
            {"name": "P4", "requests": 4, "prompt_tokens": 1000, "output_tokens": 20},
        ],
    )
    # prefills of 0.2 and 0.24 s for P2: a few milliseconds of the machine's own jitter (a 2-core
    # machine winding down after the lab tier) move the increase by a percent, not by half of it
    fast = double("--prefill-s-per-token", "100e-6", "--token-interval-s", "0.002")
    slow = double("--prefill-s-per-token", "120e-6", "--token-interval-s", "0.002")
    for url, label in ((fast, "200"), (slow, "100e")):
        assert (
            bench(
                cli,
                url,
                p,
                "--rounds",
                "2",
                "--label",
                label,
                "--link-speed",
                label,
                "--metadata",
                f"image=nvcr.io/x:{label}",
                "note=lab run",
                "-o",
                str(tmp_path / label),
            ).code
            == 0
        )
    meta = json.loads((tmp_path / "200/run.json").read_text())["metadata"]
    assert meta == {"image": "nvcr.io/x:200", "note": "lab run"}
    result = json.loads((tmp_path / "200/result_P2.json").read_text())
    assert result["image"] == "nvcr.io/x:200" and result["note"] == "lab run" and "mean_ttft_ms" in result
    refused = bench(cli, fast, p, "--metadata", "no equals sign", "-o", str(tmp_path / "bad"))
    assert refused.code == 2 and "write KEY=VALUE" in refused.err
    implicit = cli("report", str(tmp_path / "200"), str(tmp_path / "100e"), "--estimate", "-o", str(tmp_path / "x"))
    assert implicit.code == 2 and "--estimate needs the served model" in implicit.err
    res = cli(
        "report", str(tmp_path / "200"), str(tmp_path / "100e"), "--estimate", "--model", "glm-5.3",
        "-o", str(tmp_path / "rep"),
    )  # fmt: skip
    assert res.code == 0, res.err
    assert "estimate: glm-5.3 (preset glm-5.3: hidden 6144, 78 layers) at TP8; " in res.err
    assert "200 = 200 Gb/s -> 100e = 109 Gb/s" in res.err
    assert "Estimate: glm-5.3" in res.out and "| engine | vllm 0.32.0 | vllm 0.32.0 |" in res.out
    assert "| metadata | image=nvcr.io/x:200, note=lab run | image=nvcr.io/x:100e, note=lab run |" in res.out
    tables = json.loads((tmp_path / "rep/tables.json").read_text())
    p2 = next(r for r in tables["ttft"] if r["test"] == "P2")
    assert 0.15 < p2["increase"] < 0.25  # 100 -> 120 us per token, plus a little fixed time
    assert p2["bound_s"] == pytest.approx(2000 * 3.376128e6 * 8 * (1 / 109e9 - 1 / 200e9), rel=1e-6)
    html = (tmp_path / "rep/report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<table>" in html
    assert "| P2 |" in res.out


@pytest.mark.slow  # two bench processes against a deliberately slow server (about 3.5 s)
def test_two_benches_into_one_new_run_directory_one_is_refused(double, tmp_path):
    """Both check that -o is new before their probe; only one writes it: the other is refused
    (the run directory's lock, or the files the first one wrote), and the run holds one label."""
    url = double("--token-interval-s", "0.01", "--prefill-s-per-token", "0.01")  # a probe of a second or more
    p = plan(tmp_path, [{"name": "slow", "requests": 1, "prompt_tokens": 50, "output_tokens": 30}])
    run = tmp_path / "run"

    def start(label: str) -> subprocess.Popen[bytes]:
        argv = ["bench", "--url", url, "--model", "fake-model", "--plan", p, "--rounds", "3", "--warmup", "0"]
        argv += ["--idle-seconds", "0", "--label", label, "-q", "-o", str(run)]
        return subprocess.Popen([sys.executable, "-m", "sparkfab", *argv], cwd=REPO, stderr=subprocess.PIPE)

    procs = [start("A"), start("B")]
    ends = [(q.wait(timeout=120), q.stderr.read().decode() if q.stderr else "") for q in procs]
    codes = sorted(code for code, _ in ends)
    assert codes[0] == 0 and codes[1] in (2, 5), ends
    refused = next(err for code, err in ends if code != 0)
    assert "run directory" in refused or "another bench" in refused or "holds files" in refused, refused
    labels = {json.loads(line)["label"] for line in (run / "requests.jsonl").read_text().splitlines()}
    assert len(labels) == 1 and labels == {json.loads((run / "run.json").read_text())["label"]}


def test_bench_says_which_test_round_and_step_it_is_at(cli, tmp_path, double):
    """Without a terminal (CI, a pipe, ssh without -t) bench still says what it does, a line per
    step naming the test, the round or warm-up, and the step; -q keeps it quiet."""
    url = double("--prefill-s-per-token", "1e-6", "--token-interval-s", "0.001")
    p = plan(tmp_path, [{"name": "P2", "requests": 2, "prompt_tokens": 100, "output_tokens": 4}])
    res = bench(cli, url, p, "--rounds", "2", "--warmup", "1", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    steps = [line for line in res.err.splitlines() if line.startswith("bench: ")]
    assert steps == [
        "bench: P2 warm-up 1/1: 2 request(s) of 100 prompt tokens",
        "bench: P2: reading /metrics before the measured rounds",
        "bench: P2 round 1/2: 2 request(s) of 100 prompt tokens",
        "bench: P2 round 2/2: 2 request(s) of 100 prompt tokens",
        "bench: P2: reading /metrics after the measured rounds",
    ], res.err
    quiet = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "-q", "-o", str(tmp_path / "quiet"))
    assert quiet.code == 0 and "bench: " not in quiet.err


def test_warm_up_rounds_come_before_each_test_larger_than_those_before_it(cli, tmp_path, double):
    """A warm-up round runs before the first test and before each test whose round holds more
    prompt tokens than any before it; the others start measured. requests.jsonl, run.json and the
    report say which."""
    url = double("--prefill-s-per-token", "1e-6", "--token-interval-s", "0.001")
    rows = [
        {"name": "A", "requests": 1, "prompt_tokens": 200, "output_tokens": 2},
        {"name": "B", "requests": 1, "prompt_tokens": 800, "output_tokens": 2},
        {"name": "C", "requests": 2, "prompt_tokens": 300, "output_tokens": 2},  # 600: not larger
        {"name": "D", "requests": 1, "prompt_tokens": 100, "output_tokens": 2},
    ]
    res = bench(cli, url, plan(tmp_path, rows), "--rounds", "2", "--warmup", "1", "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    sent = [json.loads(x) for x in (tmp_path / "run/requests.jsonl").read_text().splitlines()]
    warm = [(r["test"], r["round"]) for r in sent if r.get("kind") != "traffic" and r["warmup"]]
    assert warm == [("A", -1), ("B", -1)]
    assert {(r["test"], r["round"]) for r in sent if not r["warmup"]} == {(t, n) for t in "ABCD" for n in (0, 1)}
    assert json.loads((tmp_path / "run/run.json").read_text())["warmup_of"] == ["A", "B"]
    rep = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"))
    assert rep.code == 0 and "2 (+1 warm-up before A, B)" in rep.out, rep.out


def test_a_full_disk_under_the_run_names_the_run_directory(double, cli, tmp_path, monkeypatch):
    """The first write into the run is its lock's; on a full disk (ENOSPC from a write, which
    carries no file name) the error names -o, not only the OS's words."""
    import contextlib
    import errno

    from sparkfab import lock

    @contextlib.contextmanager
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
        yield

    monkeypatch.setattr(lock, "held", full)
    url = double("--prefill-s-per-token", "1e-6", "--token-interval-s", "0.0005")
    p = plan(tmp_path, [{"name": "x", "requests": 1, "prompt_tokens": 100, "output_tokens": 4}])
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", "--idle-seconds", "0", "-o", str(tmp_path / "run"))
    assert res.code == 5 and f"-o {tmp_path / 'run'}: writing the run: No space left on device" in res.err, res.err
