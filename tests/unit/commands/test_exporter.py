"""`exporter:` in the inventory and the `sparkfab exporter` verb's read-only actions: the scrape
configuration as promtool checks it, and the Grafana dashboard's queries as Prometheus parses
them, each naming series the exporter serves."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sparkfab.resolve import load_plan
from tests.conftest import REPO
from tests.helpers.prometheus import dashboard_queries

PAIR = REPO / "inventory/pair-1cable.yml"
promtool = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(promtool is None, reason="no promtool (Debian's prometheus, scripts/setup.sh)")


def _inventory(tmp_path: Path, exporter: str) -> Path:
    text = PAIR.read_text().replace("      exporter: true\n", f"      exporter: {exporter}\n" if exporter else "")
    path = tmp_path / "pair.yml"
    path.write_text(text)
    return path


def test_the_inventory_asks_for_the_exporter_and_its_values_are_checked(tmp_path, cli):
    assert load_plan(str(PAIR)).exporter is not None and load_plan(str(PAIR)).exporter.port == 9465
    assert load_plan(str(_inventory(tmp_path, ""))).exporter is None
    assert load_plan(str(_inventory(tmp_path, "false"))).exporter is None
    plan = load_plan(str(_inventory(tmp_path, "{port: 9100, interval_ms: 0.5, peak_window_s: 30}")))
    assert (plan.exporter.port, plan.exporter.interval_s, plan.exporter.peak_window_s) == (9100, 0.0005, 30)
    bad = cli("validate", str(_inventory(tmp_path, "{port: 8000, interval_ms: 0, peak_window_s: yes}")))
    assert bad.code == 2  # every problem at once
    assert "interval_ms" in bad.err and "peak_window_s" in bad.err and "0.1-1000 ms" in bad.err
    assert "the exporter's port 8000 is taken by instance llama's API" in bad.err
    taken = cli("validate", str(_inventory(tmp_path, "{port: 8000}")))
    assert taken.code == 2 and "the exporter's port 8000 is taken by instance llama's API" in taken.err


def test_no_exporter_files_without_the_key(tmp_path, cli):
    assert cli("render", str(_inventory(tmp_path, "")), "-o", str(tmp_path / "tree")).code == 0
    assert not list((tmp_path / "tree").rglob("*exporter*"))
    res = cli("exporter", "prometheus", str(_inventory(tmp_path, "")))
    assert res.code == 2 and "add `exporter: true`" in res.err


@needs_promtool
def test_the_scrape_configuration_is_one_prometheus_takes(tmp_path, cli):
    res = cli("exporter", "prometheus", str(PAIR))
    assert res.code == 0, res.err
    doc = yaml.safe_load(res.out)
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    assert jobs["sparkfab-fabric"]["static_configs"] == [
        {"targets": ["10.0.0.21:9465", "10.0.0.22:9465"], "labels": {"cluster": "pair1"}}
    ]
    # vLLM's /metrics on rank 0's API
    assert jobs["sparkfab-engine"]["static_configs"][0]["targets"] == ["10.0.0.21:8000"]
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(res.out)
    check = subprocess.run([promtool, "check", "config", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def _load_asset():
    path = REPO / "fabric/sparkfab/assets/exporter.py"
    spec = importlib.util.spec_from_file_location("sparkfab_exporter_asset", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_promtool
def test_the_dashboards_queries_parse_and_name_what_the_exporter_serves(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("ANSIBLE_INVENTORY", raising=False)
    res = cli("exporter", "dashboard")  # no inventory needed
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["uid"] and {v["name"] for v in doc["templating"]["list"]} >= {"cluster", "source", "datasource"}
    queries = dashboard_queries(res.out)
    records = [{"record": f"q{i}", "expr": q} for i, q in enumerate(queries)]
    rules = {"groups": [{"name": "dashboard", "rules": records}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    check = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    # every sparkfab series a panel asks for is one the exporter serves
    served = set(re.findall(r"^# TYPE (\S+)", _served(tmp_path), re.M))
    served |= {n + "_total" for n in served}
    asked = {m for q in queries for m in re.findall(r"\b(sparkfab_[a-z_]+)", q)}
    assert asked and asked <= served, asked - served
    assert any("vllm:time_to_first_token_seconds_bucket" in q for q in queries)


def _served(root: Path) -> str:
    mod = _load_asset()
    net = root / "sys/class/net/eth0"
    (net / "statistics").mkdir(parents=True)
    for name in ("tx_bytes", "rx_bytes"):
        (net / "statistics" / name).write_text("0\n")
    cfg = {"host": "h", "devices": [{"netdev": "eth0", "rdma": "", "rail": "r", "peer": ""}]}
    return str(mod.FabricExporter(cfg, str(root)).exposition(True))


def test_status_rows_from_a_live_exporter_and_from_a_host_that_does_not_answer(tmp_path):
    """`exporter status` reads each host's own /metrics (here: an exporter on this machine's
    loopback, through testinfra's local backend) and names a host whose ssh fails instead of
    ending the verb (a port nothing listens on, on loopback)."""
    import socket
    import sys
    import time
    import urllib.request

    import testinfra.backend
    import testinfra.host

    from sparkfab.commands.exporter_cmd import row
    from sparkfab.connection import connect

    root = tmp_path / "root"
    cfg = tmp_path / "exporter.json"
    net = root / "sys/class/net/eth9"
    (net / "statistics").mkdir(parents=True)
    for name in ("tx_bytes", "rx_bytes"):
        (net / "statistics" / name).write_text("5\n")
    (net / "operstate").write_text("up\n")
    (net / "carrier").write_text("1\n")
    cfg.write_text(json.dumps({"host": "h", "devices": [{"netdev": "eth9", "rdma": "", "rail": "r0", "peer": ""}]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    asset = REPO / "fabric/sparkfab/assets/exporter.py"
    argv = [sys.executable, str(asset), "--config", str(cfg), "--root", str(root), "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        backend = testinfra.backend.get_backend("local://")
        here = testinfra.host.Host(backend)
        backend.set_host(here)
        live = row("h", here, port)
        assert (live["series"], live["links_up"], live["links"]) == (1, 1, 1) and live["missed"] is not None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    (tmp_path / "ssh_config").write_text("Host nowhere\n  HostName 127.0.0.1\n  Port 1\n  BatchMode yes\n")
    gone = row("nowhere", connect("nowhere", str(tmp_path / "ssh_config")), port)
    assert gone["state"] == "unreachable" and "refused" in gone["detail"].lower(), gone
