"""netplan for the fabric netdevs only (never the management interface).

`renderer` is set per interface: a top-level renderer would leak into every other netplan
file on the host. Twins sit on different subnets; MTU, no DHCP, no link-local, no RA.
"""

from __future__ import annotations

from typing import Any

import yaml

from sparkfab.plan import Host, Plan, Route
from sparkfab.render import File

PATH = "/etc/netplan/60-sparkfab.yaml"


def netplan(plan: Plan, host: Host, renderer: str = "networkd") -> File:
    ethernets: dict[str, Any] = {}
    for iface in host.ifaces:
        eth: dict[str, Any] = {
            "renderer": renderer,
            "dhcp4": False,
            "dhcp6": False,
            "accept-ra": False,
            "link-local": [],
            "mtu": plan.mtu,
            "addresses": [iface.address],
            "optional": True,
        }
        routes = [_route(r) for r in host.routes if r.dev == iface.netdev]
        if routes:
            eth["routes"] = routes
        ethernets[iface.netdev] = eth
    doc = {"network": {"version": 2, "ethernets": ethernets}}
    head = f"# sparkfab: fabric of {plan.cluster}/{host.name} (generated; edit the inventory instead)\n"
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=120)
    return File(PATH, head + body, 0o600)


def _route(r: Route) -> dict[str, str]:
    """`from` is the preferred source (networkd `PreferredSource=`, NetworkManager `src`)."""
    out = {"to": r.to, "via": r.via}
    if r.source:
        out["from"] = r.source
    return out
