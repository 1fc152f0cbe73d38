"""When a rebooted lab Spark is ready: what its fabric held before the reboot is back.

A machine's boot ends (`systemctl is-system-running`) before systemd-networkd has necessarily
put every address and route on the fabric netdevs back: a netdev made anew is configured when
networkd sees it, a moment later. Until then the Spark answers ssh on its management port and
sends replies for a peer's fabric address out of that port (its default route), so a check run
at once fails for a reason a real Spark, waited for, would not show. `lab reboot` returns once
the fabric is as it was: the IPv4 addresses and the routes of its fabric netdevs.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sparkfab.spark import port_of

#: how long a rebooted Spark's networkd may take to configure its fabric again
FABRIC_WAIT_S = 60.0


def fabric_state(run: Any) -> set[str]:
    """The fabric's IPv4 addresses and routes, as `addr DEV A/N` and `route DEV DEST via GW`
    (`run(*argv)` runs a command inside the machine; a failed read is an empty state)."""
    out: set[str] = set()
    addrs = run("ip", "-j", "-4", "addr", "show")
    for link in json.loads(addrs.stdout or "[]") if addrs.returncode == 0 else []:
        if port_of(str(link.get("ifname", ""))):
            out |= {f"addr {link['ifname']} {a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])}
    routes = run("ip", "-j", "-4", "route", "show", "table", "all")
    for r in json.loads(routes.stdout or "[]") if routes.returncode == 0 else []:
        if port_of(str(r.get("dev", ""))) and r.get("protocol") != "kernel":
            out.add(f"route {r['dev']} {r.get('dst', '?')} via {r.get('gateway', '-')}")
    return out


def wait_fabric(run: Any, before: set[str], timeout: float = FABRIC_WAIT_S) -> tuple[float, set[str]]:
    """Until everything of `before` is held again; (seconds waited, what is still missing)."""
    t0 = time.monotonic()
    missing = set(before)
    while missing and time.monotonic() - t0 < timeout:
        missing = before - fabric_state(run)
        if missing:
            time.sleep(0.2)
    return time.monotonic() - t0, missing
