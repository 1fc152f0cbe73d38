"""netplan for the fabric netdevs only (never the management interface).

`renderer` is set per interface: a top-level renderer would leak into every other netplan
file on the host. Twins sit on different subnets; MTU, no DHCP, no link-local, no RA.

Every fabric port keeps its address whatever its carrier does (`ignore-carrier`: networkd's
ConfigureWithoutCarrier=, and IgnoreCarrierLoss= follows it). A switchless ring's control
routes leave through one port with the Spark's control address, on its other port, as their
source: were that address dropped when its cable's far end goes down (a neighbour rebooting or
applying), the kernel would flush those routes with it, and networkd, which owns them on the
other port, would not add them again.
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
            "ignore-carrier": True,
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
