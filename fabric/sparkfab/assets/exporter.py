#!/usr/bin/env python3
"""sparkfab's fabric exporter: one Spark's fabric counters as Prometheus metrics.

`apply` installs it on every Spark of an inventory that asks for it (`exporter:` in the sparkfab
block) with its configuration (/etc/sparkfab/exporter.json: the host, each fabric netdev with its
RDMA device, rail and far end) and a systemd unit; `sparkfab exporter start|stop` runs it.
It needs Python 3's standard library only, and no root: everything it reads is in /sys.

A thread reads every byte counter each interval (1 ms by default) and keeps, per counter, the
highest rate of one interval within the last `peak_window_s` seconds: the bursts that a scrape
every 15 s averages away. A scrape answers with the counters as they are at that moment, so
Prometheus's rate() over them is exact; it speaks OpenMetrics when asked (Prometheus asks) and
the text format 0.0.4 otherwise.

Series (labels host, device, rdma, rail, peer; `source` says which counters: netdev for the
kernel's, rdma for the RDMA port's, which alone see RDMA traffic):
  sparkfab_fabric_{transmit,receive}_bytes_total                 counter
  sparkfab_fabric_{transmit,receive}_peak_bytes_per_second       gauge, highest 1-interval rate in the window
  sparkfab_fabric_link_up                                        1 when the netdev is up with carrier
  sparkfab_fabric_link_speed_bytes_per_second                    what the netdev reports (/sys/class/net/*/speed)
  sparkfab_fabric_rdma_port_active                               1 when the RDMA port is ACTIVE
  sparkfab_fabric_rdma_rate_bytes_per_second                     the RDMA port's rate
  sparkfab_fabric_errors_total{counter=...}                      error and discard counters the device has
  sparkfab_fabric_congestion_total{counter=...}                  ECN/CNP counters the RDMA device has
  sparkfab_exporter_samples_total, sparkfab_exporter_missed_samples_total, sparkfab_exporter_interval_seconds,
  sparkfab_exporter_peak_window_seconds
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: the netdev's error and discard counters (/sys/class/net/<if>/statistics/)
NETDEV_ERRORS = (
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_missed_errors",
    "rx_over_errors",
    "tx_carrier_errors",
)
#: the RDMA port's error and discard counters (ports/1/counters/ and ports/1/hw_counters/)
RDMA_ERRORS = (
    "counters/symbol_error",
    "counters/port_rcv_errors",
    "counters/port_rcv_remote_physical_errors",
    "counters/port_xmit_discards",
    "counters/link_downed",
    "counters/link_error_recovery",
    "counters/local_link_integrity_errors",
    "counters/excessive_buffer_overrun_errors",
    "hw_counters/out_of_buffer",
    "hw_counters/out_of_sequence",
    "hw_counters/packet_seq_err",
    "hw_counters/local_ack_timeout_err",
    "hw_counters/rx_icrc_encapsulated",
)
#: RoCE congestion control: what ECN marked and CNPs sent and handled
RDMA_CONGESTION = (
    "hw_counters/np_ecn_marked_roce_packets",
    "hw_counters/np_cnp_sent",
    "hw_counters/rp_cnp_handled",
)
#: one sample of a family: (suffix of the family's name, labels, value)
Sample = tuple[str, dict[str, str], float]
CONTENT_TEXT = "text/plain; version=0.0.4; charset=utf-8"
CONTENT_OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def escape(value: str) -> str:
    """A label value as both formats write it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs.items()) + "}"


def read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            return int(f.read(64).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(256).strip()
    except OSError:
        return None


class Counter:
    """One byte counter read each interval, with its highest rate over the window."""

    __slots__ = ("bucket_of", "buckets", "direction", "fd", "labels", "unit", "value")

    def __init__(self, path: str, unit: int, labels_: dict[str, str], direction: str, window: int) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.unit = unit
        self.labels = labels_
        self.direction = direction
        self.value = self.read()
        self.buckets = [0.0] * window  # per second of the window: the highest rate seen in it
        self.bucket_of = [0] * window  # which second each slot holds

    def read(self) -> int:
        return int(os.pread(self.fd, 32, 0)) * self.unit


class FabricExporter:
    def __init__(self, config: dict[str, Any], root: str = "/") -> None:
        self.host = str(config["host"])
        self.interval_ns = max(int(float(config.get("interval_s", 0.001)) * 1e9), 100_000)
        self.window = max(int(config.get("peak_window_s", 15)), 1)
        self.root = root.rstrip("/")
        self.devices: list[dict[str, str]] = []
        self.counters: list[Counter] = []
        for d in config["devices"]:
            dev = {k: str(d.get(k) or "") for k in ("netdev", "rdma", "rail", "peer")}
            self.devices.append(dev)
            base = {"host": self.host, "device": dev["netdev"], "rdma": dev["rdma"], "rail": dev["rail"]}
            base["peer"] = dev["peer"]
            stats = f"{self.root}/sys/class/net/{dev['netdev']}/statistics"
            port = f"{self.root}/sys/class/infiniband/{dev['rdma']}/ports/1/counters"
            for source, folder, names, unit in (
                ("netdev", stats, ("tx_bytes", "rx_bytes"), 1),
                ("rdma", port, ("port_xmit_data", "port_rcv_data"), 4),  # in units of 4 bytes
            ):
                if source == "rdma" and not dev["rdma"]:
                    continue
                for name, direction in zip(names, ("transmit", "receive"), strict=True):
                    path = f"{folder}/{name}"
                    if os.path.isfile(path):
                        self.counters.append(Counter(path, unit, {**base, "source": source}, direction, self.window))
        self.lock = threading.Lock()
        self.samples = 0
        self.missed = 0
        self.stopping = threading.Event()
        self.started = time.time()

    # ------------------------------------------------------------------ the sampling loop
    def tick(self, t_ns: int, dt_ns: int) -> None:
        """Read every counter once; `dt_ns` since the last read (the rates' interval)."""
        second = t_ns // 1_000_000_000
        slot = second % self.window
        for c in self.counters:
            try:
                value = c.read()
            except (OSError, ValueError):
                continue
            rate = (value - c.value) * 1e9 / dt_ns if dt_ns > 0 and value >= c.value else 0.0
            c.value = value
            if c.bucket_of[slot] != second:
                c.bucket_of[slot], c.buckets[slot] = second, rate
            elif rate > c.buckets[slot]:
                c.buckets[slot] = rate

    def peak(self, c: Counter, now_ns: int) -> float:
        second = now_ns // 1_000_000_000
        return max(
            (r for r, s in zip(c.buckets, c.bucket_of, strict=True) if second - self.window < s <= second),
            default=0.0,
        )

    def run(self) -> None:
        step = self.interval_ns
        prev = time.monotonic_ns()
        deadline = prev + step
        while not self.stopping.is_set():
            now = time.monotonic_ns()
            if deadline > now:
                time.sleep((deadline - now) / 1e9)
            t = time.monotonic_ns()
            with self.lock:
                self.tick(t, t - prev)
                self.samples += 1
            prev = t
            deadline += step
            late = time.monotonic_ns() - deadline
            if late > 0:  # skip the ticks that cannot be made, and count them
                skipped = late // step + 1
                with self.lock:
                    self.missed += skipped
                deadline += skipped * step

    # ------------------------------------------------------------------ what a scrape sees
    def families(self) -> list[tuple[str, str, str, list[Sample]]]:
        """(name, type, help, [(sample suffix, labels, value)]) of every family, read now."""
        now = time.monotonic_ns()
        with self.lock:
            values = [(c, _current(c), self.peak(c, now)) for c in self.counters]
            samples, missed = self.samples, self.missed
        fams: list[tuple[str, str, str, list[Sample]]] = []
        for direction in ("transmit", "receive"):
            mine = [(c, v, p) for c, v, p in values if c.direction == direction]
            fams.append(
                (
                    f"sparkfab_fabric_{direction}_bytes",
                    "counter",
                    f"Bytes the fabric port {'sent' if direction == 'transmit' else 'received'}.",
                    [("_total", c.labels, float(v)) for c, v, _ in mine],
                )
            )
            fams.append(
                (
                    f"sparkfab_fabric_{direction}_peak_bytes_per_second",
                    "gauge",
                    f"Highest rate over one sampling interval within the last {self.window} s.",
                    [("", c.labels, p) for c, _, p in mine],
                )
            )
        state = self._device_state()
        fams += [
            ("sparkfab_fabric_link_up", "gauge", "1 when the fabric netdev is up with carrier.", state["up"]),
            (
                "sparkfab_fabric_link_speed_bytes_per_second",
                "gauge",
                "The netdev's link speed as it reports it.",
                state["speed"],
            ),
            ("sparkfab_fabric_rdma_port_active", "gauge", "1 when the RDMA port is ACTIVE.", state["active"]),
            ("sparkfab_fabric_rdma_rate_bytes_per_second", "gauge", "The RDMA port's rate.", state["rate"]),
            ("sparkfab_fabric_errors", "counter", "Error and discard counters of the fabric devices.", state["errors"]),
            ("sparkfab_fabric_congestion", "counter", "RoCE congestion (ECN marks, CNPs).", state["congestion"]),
            (
                "sparkfab_exporter_samples",
                "counter",
                "Reads of every counter made.",
                [("_total", {"host": self.host}, float(samples))],
            ),
            (
                "sparkfab_exporter_missed_samples",
                "counter",
                "Sampling intervals the loop could not keep.",
                [("_total", {"host": self.host}, float(missed))],
            ),
            (
                "sparkfab_exporter_interval_seconds",
                "gauge",
                "The sampling interval.",
                [("", {"host": self.host}, self.interval_ns / 1e9)],
            ),
            (
                "sparkfab_exporter_peak_window_seconds",
                "gauge",
                "The window the peak gauges look back over.",
                [("", {"host": self.host}, float(self.window))],
            ),
        ]
        return fams

    def _device_state(self) -> dict[str, list[Sample]]:
        """Link state, speed, RDMA port state and rate, error and congestion counters of every
        device: read at each scrape (they change seldom; the loop reads only bytes)."""
        out: dict[str, list[Sample]] = {k: [] for k in ("up", "speed", "active", "rate", "errors", "congestion")}
        for d in self.devices:
            lab = {"host": self.host, "device": d["netdev"], "rdma": d["rdma"], "rail": d["rail"], "peer": d["peer"]}
            self._netdev_state(d["netdev"], lab, out)
            if d["rdma"]:
                self._rdma_state(d["rdma"], lab, out)
        return out

    def _netdev_state(self, netdev: str, lab: dict[str, str], out: dict[str, list[Sample]]) -> None:
        net = f"{self.root}/sys/class/net/{netdev}"
        oper = read_text(f"{net}/operstate")
        if oper is not None:
            out["up"].append(("", lab, 1.0 if oper == "up" and read_int(f"{net}/carrier") == 1 else 0.0))
        mbps = read_int(f"{net}/speed")
        if mbps is not None and mbps > 0:
            out["speed"].append(("", lab, mbps * 125_000.0))
        for name in NETDEV_ERRORS:
            v = read_int(f"{net}/statistics/{name}")
            if v is not None:
                out["errors"].append(("_total", {**lab, "source": "netdev", "counter": name}, float(v)))

    def _rdma_state(self, rdma: str, lab: dict[str, str], out: dict[str, list[Sample]]) -> None:
        port = f"{self.root}/sys/class/infiniband/{rdma}/ports/1"
        state = read_text(f"{port}/state")
        if state is not None:
            out["active"].append(("", lab, 1.0 if state.endswith("ACTIVE") else 0.0))
        gbps = re.match(r"\s*([\d.]+)\s*Gb/sec", read_text(f"{port}/rate") or "")
        if gbps:
            out["rate"].append(("", lab, float(gbps.group(1)) * 1.25e8))
        for kinds, into in ((RDMA_ERRORS, "errors"), (RDMA_CONGESTION, "congestion")):
            for name in kinds:
                v = read_int(f"{port}/{name}")
                if v is not None:
                    out[into].append(("_total", {**lab, "source": "rdma", "counter": name.split("/")[1]}, float(v)))

    def exposition(self, openmetrics: bool) -> str:
        out = []
        for name, kind, text, samples in self.families():
            family = name if openmetrics or kind != "counter" else name + "_total"
            out.append(f"# HELP {family} {text}")
            out.append(f"# TYPE {family} {kind}")
            for suffix, lab, value in samples:
                out.append(f"{name}{suffix}{labels(lab)} {_number(value)}")
        if openmetrics:
            out.append("# EOF")
        return "\n".join(out) + "\n"


def _current(c: Counter) -> int:
    """The counter as it is now (a scrape's rate() is then exact), else its last reading."""
    try:
        return c.read()
    except (OSError, ValueError):
        return c.value


def _number(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 2**63 else repr(v)


def wants_openmetrics(accept: str) -> bool:
    """Prometheus asks for OpenMetrics first; a plain client gets the text format."""
    return "application/openmetrics-text" in (accept or "")


def handler_for(exporter: FabricExporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "sparkfab-exporter"

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/metrics":
                om = wants_openmetrics(self.headers.get("Accept", ""))
                body = exporter.exposition(om).encode()
                ctype = CONTENT_OPENMETRICS if om else CONTENT_TEXT
                code = 200
            elif path == "/":
                body, ctype, code = b"sparkfab fabric exporter: /metrics\n", "text/plain", 200
            else:
                body, ctype, code = b"not found\n", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # scrapes are not news
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="sparkfab's fabric exporter (Prometheus metrics of one Spark)")
    p.add_argument("--config", default="/etc/sparkfab/exporter.json")
    p.add_argument("--root", default="/", help="where /sys is (tests)")
    p.add_argument("--listen", help="address:port (default: the configuration's)")
    args = p.parse_args(argv)
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    exporter = FabricExporter(config, args.root)
    addr, _, port = (args.listen or f"{config.get('listen', '0.0.0.0')}:{config.get('port', 9465)}").rpartition(":")
    server = ThreadingHTTPServer((addr or "0.0.0.0", int(port)), handler_for(exporter))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: exporter.stopping.set())
    sampler = threading.Thread(target=exporter.run, name="sampler", daemon=True)
    sampler.start()
    web = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    web.start()
    print(
        f"sparkfab exporter: {len(exporter.counters)} counters of {len(exporter.devices)} devices every "
        f"{exporter.interval_ns / 1e6:g} ms, on {addr or '0.0.0.0'}:{port}/metrics",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not exporter.stopping.wait(1.0):
            if not sampler.is_alive():
                print("sparkfab exporter: the sampling loop ended", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
