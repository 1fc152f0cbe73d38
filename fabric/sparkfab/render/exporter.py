"""The fabric exporter's files on one Spark (`exporter:` in the inventory): its configuration (the
host, each fabric netdev with its RDMA device, rail and far end: the labels of its series), the
script itself (`assets/exporter.py`) and its systemd unit, kept under /etc/sparkfab like the
control plane's units; `sparkfab exporter start` installs and enables the unit."""

from __future__ import annotations

import json

from sparkfab.plan import Host, Iface, Plan
from sparkfab.render import File
from sparkfab.render.text import fill

CONFIG_PATH = "/etc/sparkfab/exporter.json"
SCRIPT_PATH = "/etc/sparkfab/exporter.py"
UNIT = "sparkfab-exporter.service"
UNIT_PATH = f"/etc/sparkfab/{UNIT}"
PYTHON = "/usr/bin/python3"


def target_host(address: str) -> str:
    """A host as a scrape target writes it (an IPv6 address in brackets)."""
    return f"[{address}]" if ":" in address else address


def peer(iface: Iface) -> str:
    """The far end of a twin's cable as the labels name it: host:netdev, or switch:port/lane."""
    if iface.peer_host:
        return f"{iface.peer_host}:{iface.peer_netdev or iface.peer_port or ''}"
    if iface.switch:
        return f"{iface.switch}:{iface.switch_port or ''}"
    return ""


def config(plan: Plan, host: Host) -> dict[str, object]:
    assert plan.exporter is not None
    return {
        "cluster": plan.cluster,
        "host": host.name,
        "port": plan.exporter.port,
        "interval_s": plan.exporter.interval_s,
        "peak_window_s": plan.exporter.peak_window_s,
        "devices": [{"netdev": i.netdev, "rdma": i.rdma, "rail": i.rail, "peer": peer(i)} for i in host.ifaces],
    }


def files(plan: Plan, host: Host, script: str) -> list[File]:
    """The exporter's three files, where the plan has one and the host has fabric ports."""
    if plan.exporter is None or not host.ifaces:
        return []
    doc = json.dumps(config(plan, host), indent=1, sort_keys=True) + "\n"
    slots = {"cluster": plan.cluster, "host": host.name, "python": PYTHON, "script": SCRIPT_PATH, "config": CONFIG_PATH}
    unit = fill("exporter.service.j2", **slots)
    return [File(CONFIG_PATH, doc), File(SCRIPT_PATH, script, 0o755), File(UNIT_PATH, unit)]
