"""A real Prometheus (Debian's `prometheus`) in a lab Spark's network namespace, scraping what
`sparkfab exporter prometheus` says, and the comparison of what it stored with a sample file."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import yaml

from tests.helpers.server import ended

PORT = 9090
#: what Grafana puts in the place of the dashboard's variables before it asks Prometheus
GRAFANA = {"$cluster": "pair1", "$source": "netdev", "$__rate_interval": "1m", "${datasource}": "x"}


def dashboard_queries(text: str, cluster: str = "pair1") -> list[str]:
    """Every query of the dashboard's panels as Grafana sends it to Prometheus."""
    out = []
    for panel in json.loads(text)["panels"]:
        for t in panel.get("targets", []):
            expr = t["expr"]
            for var, value in {**GRAFANA, "$cluster": cluster}.items():
                expr = expr.replace(var, value)
            out.append(expr)
    return out


class Prometheus:
    def __init__(self, netns: str, proc: subprocess.Popen[str]) -> None:
        self.netns = netns
        self.proc = proc

    def api(self, path: str, **params: str) -> dict:
        """GET /api/v1/<path> from inside the namespace (where it listens on loopback)."""
        url = f"http://127.0.0.1:{PORT}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        code = "import sys, urllib.request as u; sys.stdout.write(u.urlopen(sys.argv[1], timeout=10).read().decode())"
        res = subprocess.run(
            ["ip", "netns", "exec", self.netns, "python3", "-c", code, url], capture_output=True, text=True, timeout=30
        )
        assert res.returncode == 0, res.stderr[-1500:]
        doc = json.loads(res.stdout)
        assert doc["status"] == "success", doc
        return dict(doc["data"])

    def wait_targets_up(self, count: int, timeout: float = 60) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            active = self.api("targets")["activeTargets"]
            if len([t for t in active if t["health"] == "up"]) >= count:
                return list(active)
            assert self.proc.poll() is None, "prometheus ended"
            assert time.monotonic() < deadline, [(t["scrapeUrl"], t["health"], t.get("lastError")) for t in active]
            time.sleep(0.5)

    def raw(self, selector: str, at: float, span_s: int) -> list[dict]:
        """Every stored sample of the selector's series within span_s before `at`."""
        return list(self.api("query", query=f"{selector}[{span_s}s]", time=f"{at:.3f}")["result"])


@contextlib.contextmanager
def running(netns: str, config_text: str, workdir: Path, interval: str = "1s") -> Iterator[Prometheus]:
    """Prometheus with `config_text` (its scrape intervals set to `interval`), in `netns`; ended
    by its pid when the block ends."""
    binary = shutil.which("prometheus")
    assert binary, "no prometheus (scripts/setup.sh installs Debian's)"
    cfg = yaml.safe_load(config_text)
    cfg["global"]["scrape_interval"] = interval
    for job in cfg["scrape_configs"]:
        job["scrape_interval"] = interval
    path = workdir / "prometheus.yml"
    path.write_text(yaml.safe_dump(cfg))
    log = (workdir / "prometheus.log").open("w")
    argv = ["ip", "netns", "exec", netns, binary, f"--config.file={path}"]
    argv += [f"--storage.tsdb.path={workdir / 'tsdb'}", f"--web.listen-address=127.0.0.1:{PORT}"]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        prom = Prometheus(netns, proc)
        deadline = time.monotonic() + 60
        while True:
            try:
                prom.api("status/buildinfo")
                break
            except AssertionError:
                assert proc.poll() is None, (workdir / "prometheus.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "prometheus did not answer within 60 s"
                time.sleep(0.3)
        yield prom
    finally:
        ended(proc, 20)
        log.close()


def rates_against_samples(prom: Prometheus, host: str, smp: Path) -> dict[str, tuple[float, float]]:
    """Per rail of `host`: (Prometheus's transmit rate, the sample file's) over the same window,
    the first to the last scrape that fall inside the file's span (B/s)."""
    from sparkfab.measure.counters import sampler

    s = sampler.read(smp)
    anchor = s.header["anchor"]
    wall = [(t - anchor["mono_ns"] + anchor["wall_ns"]) / 1e9 for t in s.t0]
    start, end = wall[0], wall[-1]
    selector = f'sparkfab_fabric_transmit_bytes_total{{host="{host}",source="netdev"}}'
    series = prom.raw(selector, end, int(end - start) + 5)
    out = {}
    for ser in series:
        device, rail = ser["metric"]["device"], ser["metric"]["rail"]
        points = [(float(t), float(v)) for t, v in ser["values"] if start <= float(t) <= end]
        assert len(points) >= 2, (rail, len(points), "scrapes inside the sampled span")
        (t0, v0), (t1, v1) = points[0], points[-1]
        col = next(i for i, c in enumerate(s.counters) if c["device"] == device and c["direction"] == "tx")

        def at(t: float, col: int = col) -> float:
            """The sampled counter at wall time t (linear between the two samples around it)."""
            i = next((k for k, w in enumerate(wall) if w >= t), len(wall) - 1)
            if i == 0:
                return float(s.values[0][col])
            w0, w1 = wall[i - 1], wall[i]
            a, b = s.values[i - 1][col], s.values[i][col]
            return a + (b - a) * ((t - w0) / (w1 - w0) if w1 > w0 else 1.0)

        out[rail] = ((v1 - v0) / (t1 - t0), (at(t1) - at(t0)) / (t1 - t0))
    return out
