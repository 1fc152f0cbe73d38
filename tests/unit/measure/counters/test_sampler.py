"""The sampler and the traffic analysis, on fake counter trees with known traffic."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkfab.errors import SparkfabError
from sparkfab.measure.counters import sampler, traffic
from tests.doubles.sysfs import fake_tree


@pytest.fixture(params=["c", "python"])
def impl(request):
    """Both read loops; the C one must have been built wherever a compiler was there at install."""
    if request.param == "c" and sampler._c_run is None and shutil.which("cc") is None:
        pytest.skip("no C compiler at install time: only the Python read loop exists")
    return request.param


class Writer:
    """Known traffic: before each sample, add `per_step` counts to every tx counter."""

    def __init__(self, counters: list[sampler.CounterFile], per_step: int, steps: int, start: int = 0) -> None:
        self.counters, self.per_step, self.steps, self.n = counters, per_step, steps, 0
        self.value = start
        self.fds = [os.open(c.path, os.O_WRONLY) for c in counters]
        self.added_bytes = 0

    def __call__(self) -> bool:
        if self.n >= self.steps:
            return True
        if self.n:
            self.value += self.per_step
            self.added_bytes += self.per_step * self.counters[0].unit
        for c, fd in zip(self.counters, self.fds, strict=True):
            if c.direction == "tx":
                os.pwrite(fd, f"{self.value:<24d}\n".encode(), 0)
        self.n += 1
        return False


def test_recovered_bytes_are_exact_and_rates_correct(tmp_path, impl):
    counters = fake_tree(tmp_path, ["rocep1s0f1", "roceP2p1s0f1"])
    # 31,250 counts x 4 bytes per 1 ms on each twin = 125 kB/ms = 1 Gb/s per twin
    w = Writer(counters, 31_250, 400)
    out = tmp_path / "s.smp"
    stats = sampler.sample(counters, out, 0.001, stop=w, impl=impl, slice_s=0)
    assert stats.impl == impl
    sr = traffic.series(sampler.read(out))
    twins = 2
    assert sr.total["tx"] == w.added_bytes * twins and sr.total["rx"] == 0
    span = (sr.times_ns[-1] - sr.times_ns[0]) / 1e9
    expected = w.added_bytes * twins * 8 / span / 1e9
    for width in (0.005, 0.1):
        _, r = traffic.rates(sr, width)
        inner = r[1:-1]
        assert abs(sum(inner) / len(inner) - expected) / expected < 0.05
    # missed deadlines depend on the machine's load: what matters is that each one is on record
    assert stats.samples == 400 and stats.missed == sum(sampler.read(out).missed)


def test_wraps_and_resets():
    assert traffic.counter_delta(10, 25) == (15, "ok")
    assert traffic.counter_delta((1 << 64) - 5, 10) == (15, "wrap")
    assert traffic.counter_delta(5_000, 300) == (300, "reset")


def test_reset_mid_run_is_counted(tmp_path, impl):
    counters = fake_tree(tmp_path, ["enp1s0f1np1"], "netdev")
    w = Writer(counters, 1000, 50, start=10**9)

    def stop() -> bool:
        if w.n == 25:
            w.value = 0  # the driver reloaded: the counter starts again at 0
        return w()

    sampler.sample(counters, tmp_path / "r.smp", 0.001, stop=stop, impl=impl, slice_s=0)
    sr = traffic.series(sampler.read(tmp_path / "r.smp"))
    assert sr.resets == 1
    # every step moved 1000 bytes; across the reset the new value (counted from 0) is the delta
    assert sr.total["tx"] == 49 * 1000


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5_000_000), st.integers(0, 10**9)), min_size=1, max_size=60),
    st.integers(1, 3_000_000),
    st.integers(0, 999),
)
def test_spreading_conserves_bytes(steps, width, offset):
    times = [1_000]
    for dt, _ in steps:
        times.append(times[-1] + dt)
    deltas = [b for _, b in steps]
    width = max(width, (times[-1] - times[0]) // 2000 + 1)  # keep the bin count small
    start = times[0] - offset
    nbins = (times[-1] - start) // width + 1
    bins = traffic.spread(times, deltas, start, width, nbins)
    assert sum(bins) == sum(deltas)
    assert all(b >= 0 for b in bins)


def test_peaks_table_shapes(tmp_path):
    counters = fake_tree(tmp_path, ["rocep1s0f0"])
    w = Writer(counters, 10_000, 300)
    sampler.sample(counters, tmp_path / "p.smp", 0.001, stop=w, slice_s=0)
    sr = traffic.series(sampler.read(tmp_path / "p.smp"))
    rows = traffic.peaks(sr, [0.001, 0.005, 0.1, 1.0])
    assert [r.interval_s for r in rows[:-1]] == [0.001, 0.005, 0.1]  # 1 s is longer than the run
    assert rows[-1].whole_window and rows[0].peak_gbps >= rows[-1].peak_gbps
    assert rows[0].uncertainty > rows[1].uncertainty > 0


def _sampler_process(tmp_path: Path, out: Path, impl: str) -> subprocess.Popen[str]:
    """A sampler of a fake `lo` in its own process; it prints its sample count when it ends."""
    fake_tree(tmp_path, ["lo"], "netdev")
    src = str(Path(sampler.__file__).parents[3])
    code = (
        f"import sys; sys.path.insert(0, {src!r}); from sparkfab.measure.counters import sampler; "
        f"st = sampler.sample(sampler.counter_files(['lo'], 'netdev', {str(tmp_path)!r}), "
        f"__import__('pathlib').Path({str(out)!r}), 0.001, impl={impl!r}); print(st.samples)"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def _until_records(p: subprocess.Popen[str], out: Path, n: int, timeout_s: float = 20.0) -> None:
    """Until the running sampler `p` has written more than n whole records (its start takes a
    Python's start: 0.3-1 s on a loaded machine); a sampler that never gets there is killed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if len(sampler.read(out).t0) > n:
                return
        except (OSError, SparkfabError):  # not made yet, or its header not whole yet
            pass
        time.sleep(0.05)
    p.kill()
    p.wait()
    raise AssertionError(f"{out} held no {n} records within {timeout_s} s (the sampler: exit {p.returncode})")


def test_killed_sampler_loses_nothing_written(tmp_path, impl):
    out = tmp_path / "k.smp"
    p = _sampler_process(tmp_path, out, impl)
    _until_records(p, out, 200)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with open(out, "ab") as f:
        f.write(b"\x01\x02\x03")  # a torn record, as if killed in the middle of a write
    s = sampler.read(out)
    assert len(s.t0) > 100 and all(b >= a for a, b in zip(s.t0, s.t1, strict=True))


def test_sigterm_ends_the_sampler_cleanly(tmp_path, impl):
    """A signal arriving while the read loop sleeps (in C with the GIL released) ends the run
    within a slice, with every record whole."""
    out = tmp_path / "t.smp"
    p = _sampler_process(tmp_path, out, impl)
    _until_records(p, out, 200)
    sent = time.monotonic()
    p.send_signal(signal.SIGTERM)
    stdout, _ = p.communicate(timeout=10)
    assert p.returncode == 0 and time.monotonic() - sent < 1.0
    s = sampler.read(out)
    assert int(stdout) == len(s.t0) > 100
    data = out.read_bytes()
    head = len(sampler.MAGIC) + 4 + int.from_bytes(data[len(sampler.MAGIC) : len(sampler.MAGIC) + 4], "little")
    assert len(data) == head + len(s.t0) * sampler.record_struct(2).size  # the header and whole records only


def test_wait_idle(tmp_path):
    counters = fake_tree(tmp_path, ["rocep1s0f0"])
    assert sampler.wait_idle(counters, below_bps=1.0, for_s=0.3, probe_s=0.05) >= 0.3
    import threading

    fd = os.open(counters[0].path, os.O_WRONLY)
    done = threading.Event()

    def busy() -> None:
        v = 0
        while not done.is_set():
            v += 10**6
            os.pwrite(fd, f"{v:<24d}\n".encode(), 0)
            time.sleep(0.002)

    t = threading.Thread(target=busy)
    t.start()
    try:
        with pytest.raises(TimeoutError):
            sampler.wait_idle(counters, below_bps=1.0, for_s=0.2, timeout_s=0.5, probe_s=0.05)
    finally:
        done.set()
        t.join()


@pytest.mark.parametrize("for_s,probe_s,probes", [(0.5, 0.1, 5), (0.1, 0.1, 1), (0.05, 0.1, 1), (0.3, 0.2, 2)])
def test_an_idle_link_costs_the_quiet_time_and_no_probe_more(monkeypatch, for_s, probe_s, probes):
    """The quiet time counts from the start of the first quiet probe: 0.5 s of quiet in probes
    of 0.1 s is five probes (the main job waited six: 0.6 s before each of 46 rounds)."""
    now = [100.0]
    windows: list[float] = []

    def probe(counters, window_s):  # a quiet link: the window passes on the clock
        windows.append(window_s)
        now[0] += window_s
        return 0.0

    monkeypatch.setattr(sampler, "rate_since", probe)
    waited = sampler.wait_idle([], below_bps=1.0, for_s=for_s, probe_s=probe_s, clock=lambda: now[0])
    assert len(windows) == probes and waited == pytest.approx(sum(windows)) and waited >= for_s - 1e-9


def test_a_busy_probe_starts_the_quiet_time_again(monkeypatch):
    now = [0.0]
    rates = iter([0.0, 0.0, 5e6, 0.0, 0.0, 0.0])

    def probe(counters, window_s):
        now[0] += window_s
        return next(rates)

    monkeypatch.setattr(sampler, "rate_since", probe)
    assert sampler.wait_idle([], below_bps=1e6, for_s=0.3, probe_s=0.1, clock=lambda: now[0]) == pytest.approx(0.6)


def test_traffic_cli(tmp_path, cli):
    counters = fake_tree(tmp_path, ["rocep1s0f0"])
    w = Writer(counters, 5_000, 200)
    sampler.sample(counters, tmp_path / "c.smp", 0.001, stop=w, slice_s=0)
    res = cli("traffic", str(tmp_path / "c.smp"), "--format", "json", "--plot", str(tmp_path / "t.png"))
    assert res.code == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    import json

    data = json.loads(res.out)
    assert data["summary"]["bytes"]["tx"] == w.added_bytes and data["direction"] == "tx"
    assert all("whole_window" not in p for p in data["peaks"][:-1]) and data["peaks"][-1]["whole_window"] is True
    assert set(data["peaks"][0]) == {"interval_s", "peak_gbps", "uncertainty"}


def test_sample_cli_refuses_missing_counters(tmp_path, cli):
    res = cli(
        "sample", "--devices", "rocep9s9f9", "--root", str(tmp_path), "--duration", "0.1", "-o", str(tmp_path / "x.smp")
    )
    assert res.code == 2 and "no rdma counters for rocep9s9f9" in res.err


def test_a_counter_that_holds_no_number_is_named_before_anything_samples(tmp_path, cli):
    """The C loop would read text as 0 and the idle wait crashed on it: a counter file that is not
    a whole number is refused by name, for sample and bench alike."""
    counters = fake_tree(tmp_path, ["eth9"], kind="netdev")
    Path(counters[0].path).write_text("abc\n")
    res = cli(
        "sample", "--devices", "eth9", "--source", "netdev", "--root", str(tmp_path), "--duration", "0.1",
        "-o", str(tmp_path / "x.smp"),
    )  # fmt: skip
    assert (
        res.code == 2 and f"not a counter (a whole number of bytes or words): {counters[0].path} holds 'abc'" in res.err
    )
    assert not (tmp_path / "x.smp").exists()
    res = cli(
        "bench", "--url", "http://127.0.0.1:9", "--model", "m", "--counters", "eth9", "--source", "netdev",
        "--root", str(tmp_path), "-o", str(tmp_path / "run"),
    )  # fmt: skip
    assert res.code == 2 and "holds 'abc'" in res.err, res.err


def test_traffic_exports_csv_and_prometheus(tmp_path, cli):
    """Rates per bin leave the tool as CSV that csv and pandas read without options, and as
    OpenMetrics that Prometheus's own parser and promtool's backfill take; the bytes in them add
    up to what the counters moved; every series is labelled with its host, device and source."""
    import csv
    import shutil
    import subprocess

    import pandas
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    counters = fake_tree(tmp_path, ["rocep1s0f0", "rocep1s0f1"])
    w = Writer(counters, 5_000, 200)
    sampler.sample(counters, tmp_path / "c.smp", 0.001, stop=w, slice_s=0, meta={"host": "spark-01"})
    csv_path, prom = tmp_path / "r.csv", tmp_path / "r.prom"
    assert cli("traffic", str(tmp_path / "c.smp"), "--export", str(csv_path), "--export-interval", "5ms").code == 0
    with csv_path.open() as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    assert list(rows[0]) == ["t_s", "wall_ms", "tx_gbps", "rx_gbps"]
    moved = sum(r["tx_gbps"] for r in rows) * 1e9 / 8 * 0.005
    assert moved == pytest.approx(2 * w.added_bytes, rel=1e-6)  # both devices
    assert all(b["wall_ms"] > a["wall_ms"] for a, b in itertools.pairwise(rows)), "wall-clock timestamps increase"
    frame = pandas.read_csv(csv_path)
    assert frame.shape == (len(rows), 4) and frame["tx_gbps"].sum() == pytest.approx(sum(r["tx_gbps"] for r in rows))
    assert cli("traffic", str(tmp_path / "c.smp"), "--export", str(prom)).code == 0
    text = prom.read_text()
    assert text.endswith("# EOF\n")
    families = list(text_string_to_metric_families(text))
    assert [f.name for f in families] == ["sparkfab_link_rate_bits_per_second"] and families[0].type == "gauge"
    samples = families[0].samples
    series = {(s.labels["device"], s.labels["direction"]) for s in samples}
    assert series == {(d, x) for d in ("rocep1s0f0", "rocep1s0f1") for x in ("tx", "rx")}
    assert {(s.labels["host"], s.labels["source"], s.labels["interval_s"]) for s in samples} == {
        ("spark-01", "rdma", "0.001")
    }
    assert all(1_600_000_000 < float(s.timestamp) < 4_000_000_000 for s in samples)  # seconds
    for device in ("rocep1s0f0", "rocep1s0f1"):
        tx_bits = sum(s.value for s in samples if s.labels["direction"] == "tx" and s.labels["device"] == device)
        assert tx_bits * 0.001 / 8 == pytest.approx(w.added_bytes, rel=1e-6)
    promtool = shutil.which("promtool")
    if promtool:  # Debian's prometheus package (scripts/setup.sh installs it)
        res = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(prom), str(tmp_path / "tsdb")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert any((tmp_path / "tsdb").iterdir())
    # a second export replaces its own file, never somebody else's
    assert cli("traffic", str(tmp_path / "c.smp"), "--export", str(prom)).code == 0
    (tmp_path / "mine.csv").write_text("precious\n")
    res = cli("traffic", str(tmp_path / "c.smp"), "--export", str(tmp_path / "mine.csv"))
    assert res.code == 2 and "did not write it" in res.err
    assert cli("traffic", str(tmp_path / "c.smp"), "--export", str(tmp_path / "x.txt")).code == 2


def test_a_netdev_sample_is_exported_as_netdev(tmp_path, cli):
    """The source comes from the counters sampled (bench records no --source): netdev counters
    are labelled netdev, in files that never said so too."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    net = tmp_path / "sys/class/net/enp1s0f0np0/statistics"
    net.mkdir(parents=True)
    for name in ("tx_bytes", "rx_bytes"):
        (net / name).write_text("0\n")
    counters = sampler.counters_of(["enp1s0f0np0"], "netdev", str(tmp_path))
    smp = tmp_path / "n.smp"
    sampler.sample(counters, smp, 0.001, duration_s=0.02, slice_s=0)
    assert sampler.read(smp).source == "netdev"
    prom = tmp_path / "n.prom"
    assert cli("traffic", str(smp), "--export", str(prom)).code == 0
    samples = [s for f in text_string_to_metric_families(prom.read_text()) for s in f.samples]
    assert {s.labels["source"] for s in samples} == {"netdev"}


def test_the_prometheus_export_escapes_what_a_sample_file_names(tmp_path, cli):
    """A header's source and a file name are label values: quotes, backslashes and newlines in
    them are escaped as the exposition format says, so Prometheus's own parser reads exactly
    the samples written (a forged line in the source stays inside its label)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    counters = fake_tree(tmp_path, ["rocep1s0f0"])
    w = Writer(counters, 5_000, 50)
    plain = tmp_path / "c.smp"
    sampler.sample(counters, plain, 0.001, stop=w, slice_s=0)
    data = plain.read_bytes()
    off = len(sampler.MAGIC)
    (n,) = struct.unpack_from("<I", data, off)
    header = json.loads(data[off + 4 : off + 4 + n])
    forged = 'rdma"} 1\nsparkfab_link_rate_bits_per_second{direction="tx",interval_s="1"} 9999\\'
    header["source"] = forged
    blob = json.dumps(header).encode()
    hostile = tmp_path / 's"x\n.smp'
    hostile.write_bytes(data[:off] + struct.pack("<I", len(blob)) + blob + data[off + 4 + n :])
    prom = tmp_path / "x.prom"
    assert cli("traffic", str(hostile), "--export", str(prom)).code == 0
    samples = [s for fam in text_string_to_metric_families(prom.read_text()) for s in fam.samples]
    bins = len([line for line in prom.read_text().splitlines() if not line.startswith("#")])
    assert len(samples) == bins and bins > 0
    assert {s.labels["source"] for s in samples} == {forged}
    assert {s.labels["file"] for s in samples} == {hostile.name}
    assert max(s.value for s in samples) < 9999e9


def test_a_span_too_long_for_its_bins_is_named_with_its_sample_file(tmp_path, cli):
    """A file whose last sample is 30 years after its first would be 946 billion 1 ms bins:
    refused, with the sample file named."""
    counters = fake_tree(tmp_path, ["rocep1s0f0"])
    out = tmp_path / "s.smp"
    sampler.sample(counters, out, 0.001, stop=Writer(counters, 5_000, 5), slice_s=0)
    data = bytearray(out.read_bytes())
    head = len(sampler.MAGIC) + 4 + int.from_bytes(data[len(sampler.MAGIC) : len(sampler.MAGIC) + 4], "little")
    rec = sampler.record_struct(2)
    last = head + ((len(data) - head) // rec.size - 1) * rec.size
    t0, t1, *rest = rec.unpack_from(data, last)
    later = 30 * 365 * 86400 * 10**9
    rec.pack_into(data, last, t0 + later, t1 + later, *rest)
    out.write_bytes(bytes(data))
    res = cli("traffic", str(out), "--format", "json")
    assert res.code == 2 and f"sparkfab: {out}: " in res.err and "bins, more than" in res.err, res.err
