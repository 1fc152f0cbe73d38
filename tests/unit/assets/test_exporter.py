"""The fabric exporter (`assets/exporter.py`) against a sysfs tree of files: what Prometheus's own
parsers and promtool make of its scrapes, its 1 ms peaks, and its end on SIGTERM (systemd's stop)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as text_format

ASSET = Path(__file__).resolve().parents[3] / "fabric/sparkfab/assets/exporter.py"
_spec = importlib.util.spec_from_file_location("sparkfab_exporter_asset", ASSET)
assert _spec and _spec.loader
exporter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(exporter)

HOSTILE_PEER = 'sw"1\\x:1/1\nfake{a="b"} 1'


def _sysfs(root: Path, rdma: bool = True) -> dict:
    """Two fabric netdevs; the first with an RDMA port (error and congestion counters), the second
    without one (a lab Spark's veths have none)."""
    for i, dev in enumerate(("enp1s0f0np0", "enP2p1s0f0np0")):
        net = root / "sys/class/net" / dev
        (net / "statistics").mkdir(parents=True)
        for name, value in (("tx_bytes", 1000), ("rx_bytes", 500), ("rx_errors", 2), ("tx_dropped", 0)):
            (net / "statistics" / name).write_text(f"{value}\n")
        (net / "operstate").write_text("up\n" if i == 0 else "down\n")
        (net / "carrier").write_text("1\n" if i == 0 else "0\n")
        (net / "speed").write_text("200000\n")
    if rdma:
        port = root / "sys/class/infiniband/rocep1s0f0/ports/1"
        (port / "counters").mkdir(parents=True)
        (port / "hw_counters").mkdir()
        (port / "counters/port_xmit_data").write_text("250\n")  # 4-byte units
        (port / "counters/port_rcv_data").write_text("100\n")
        (port / "counters/symbol_error").write_text("7\n")
        (port / "hw_counters/np_cnp_sent").write_text("3\n")
        (port / "state").write_text("4: ACTIVE\n")
        (port / "rate").write_text("200 Gb/sec (4X HDR)\n")
    return {
        "cluster": "pair1",
        "host": "spark-a",
        "port": 9465,
        "interval_s": 0.001,
        "peak_window_s": 5,
        "devices": [
            {"netdev": "enp1s0f0np0", "rdma": "rocep1s0f0", "rail": "c0-r0", "peer": "spark-b:enp1s0f0np0"},
            {"netdev": "enP2p1s0f0np0", "rdma": "roceP2p1s0f0", "rail": "c0-r1", "peer": HOSTILE_PEER},
        ],
    }


def _samples(text: str, parse) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in parse(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _one(samples: dict, name: str, **labels: str) -> float:
    hits = [v for (n, lab), v in samples.items() if n == name and all((k, v2) in lab for k, v2 in labels.items())]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def test_a_scrape_in_both_formats_is_what_prometheus_parsers_read(tmp_path):
    e = exporter.FabricExporter(_sysfs(tmp_path), str(tmp_path))
    om = e.exposition(True)
    assert om.endswith("# EOF\n")
    for text, parse in ((om, openmetrics), (e.exposition(False), text_format)):
        s = _samples(text, parse)
        # bytes: netdev counters as they are, the RDMA port's in its 4-byte units
        assert _one(s, "sparkfab_fabric_transmit_bytes_total", device="enp1s0f0np0", source="netdev") == 1000
        assert _one(s, "sparkfab_fabric_transmit_bytes_total", device="enp1s0f0np0", source="rdma") == 1000
        assert _one(s, "sparkfab_fabric_receive_bytes_total", device="enp1s0f0np0", source="rdma") == 400
        # a device without RDMA counters has only its netdev series; its labels survive escaping
        assert _one(s, "sparkfab_fabric_transmit_bytes_total", device="enP2p1s0f0np0")
        assert _one(s, "sparkfab_fabric_link_up", device="enP2p1s0f0np0", peer=HOSTILE_PEER) == 0
        assert _one(s, "sparkfab_fabric_link_up", device="enp1s0f0np0", rail="c0-r0", host="spark-a") == 1
        assert _one(s, "sparkfab_fabric_link_speed_bytes_per_second", device="enp1s0f0np0") == 25e9
        assert _one(s, "sparkfab_fabric_rdma_port_active", rdma="rocep1s0f0") == 1
        assert _one(s, "sparkfab_fabric_rdma_rate_bytes_per_second", rdma="rocep1s0f0") == 25e9
        assert _one(s, "sparkfab_fabric_errors_total", counter="symbol_error") == 7
        assert _one(s, "sparkfab_fabric_errors_total", counter="rx_errors", device="enp1s0f0np0") == 2
        assert _one(s, "sparkfab_fabric_congestion_total", counter="np_cnp_sent") == 3
        assert _one(s, "sparkfab_exporter_peak_window_seconds") == 5
    promtool = shutil.which("promtool")
    if promtool:  # Debian's prometheus package (scripts/setup.sh installs it): its linter passes it
        lint = subprocess.run([promtool, "check", "metrics"], input=e.exposition(False), capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_scrape_reads_the_counters_as_they_are_now(tmp_path):
    """No sample of the loop stands between a scrape and the kernel: Prometheus's rate() is exact."""
    e = exporter.FabricExporter(_sysfs(tmp_path, rdma=False), str(tmp_path))
    (tmp_path / "sys/class/net/enp1s0f0np0/statistics/tx_bytes").write_text("123456789\n")
    s = _samples(e.exposition(True), openmetrics)
    assert _one(s, "sparkfab_fabric_transmit_bytes_total", device="enp1s0f0np0") == 123456789


def test_the_peak_is_the_highest_one_interval_rate_within_the_window(tmp_path):
    e = exporter.FabricExporter(_sysfs(tmp_path, rdma=False), str(tmp_path))
    tx = tmp_path / "sys/class/net/enp1s0f0np0/statistics/tx_bytes"
    t = 100 * 10**9
    e.tick(t, 1_000_000)  # nothing moved
    tx.write_text("26000\n")  # 25,000 bytes in 1 ms: 25 MB/s
    e.tick(t + 1_000_000, 1_000_000)
    tx.write_text("27000\n")  # 1,000 bytes in 2 ms
    e.tick(t + 3_000_000, 2_000_000)
    c = next(c for c in e.counters if c.labels["device"] == "enp1s0f0np0" and c.direction == "transmit")
    assert e.peak(c, t + 3_000_000) == pytest.approx(25e6)
    assert e.peak(c, t + 4 * 10**9) == pytest.approx(25e6)  # still inside the 5 s window
    assert e.peak(c, t + 5 * 10**9) == 0  # that second has left the window
    # a counter that went backwards (a driver reset) is no peak
    tx.write_text("5\n")
    e.tick(t + 6 * 10**9, 1_000_000)
    assert e.peak(c, t + 6 * 10**9) == 0
    s = _samples(e.exposition(True), openmetrics)
    assert _one(s, "sparkfab_fabric_transmit_peak_bytes_per_second", device="enp1s0f0np0") >= 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_it_serves_openmetrics_to_prometheus_and_ends_on_sigterm(tmp_path):
    cfg = tmp_path / "exporter.json"
    cfg.write_text(json.dumps(_sysfs(tmp_path)))
    port = _free_port()
    argv = [sys.executable, str(ASSET), "--config", str(cfg), "--root", str(tmp_path), "--listen", f"127.0.0.1:{port}"]
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 20
        while True:
            try:
                plain = urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.stderr else ""
                time.sleep(0.05)
        assert plain.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        # what Prometheus 2.x sends first
        accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        om = urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=2)
        assert om.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        s = _samples(om.read().decode(), openmetrics)
        time.sleep(0.3)
        s2 = _samples(urllib.request.urlopen(url, timeout=2).read().decode(), text_format)
        assert _one(s2, "sparkfab_exporter_samples_total") > _one(s, "sparkfab_exporter_samples_total") > 0
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=5) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_its_copy_of_the_counter_files_is_the_samplers(tmp_path):
    """The exporter ships as one file, so it spells the counter files itself: it reads exactly the
    files bench's sampler reads (measure.counters.sampler.SOURCES, whose RDMA folder is facts.rdma's)."""
    from sparkfab.measure.counters.sampler import counter_files

    root = tmp_path / "root"
    want = {(c.path, c.unit) for src in ("rdma", "netdev") for c in counter_files(["x"], src, str(root))}
    for p, _unit in want:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        Path(p).write_text("0\n")
    config = {"host": "h", "devices": [{"netdev": "x", "rdma": "x", "rail": "r0", "peer": ""}]}
    opened = exporter.FabricExporter(config, str(root)).counters
    assert {(os.readlink(f"/proc/self/fd/{c.fd}"), c.unit) for c in opened} == want
