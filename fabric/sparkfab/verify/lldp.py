"""Cabling against the plan from LLDP neighbours, per port (Cumulus PTM semantics):
pass when the neighbour's system name and port id match the plan, fail with expected and
actual otherwise, `missing` when a port has no neighbour (a dead cable)."""

from __future__ import annotations

import json
import re

from sparkfab.plan import Host, Iface
from sparkfab.verify.result import FAIL, PASS, Result


def neighbours(lldpcli_json: str) -> dict[str, tuple[str, str]]:
    """`lldpcli -f json show neighbors` -> {local interface: (system name, port id)}.

    lldpcli writes a dict instead of a list when there is one interface or one chassis.
    """
    data = json.loads(lldpcli_json or "{}").get("lldp") or {}
    ifaces = data.get("interface") or []
    if isinstance(ifaces, dict):
        ifaces = [{k: v} for k, v in ifaces.items()]
    out = {}
    for entry in ifaces:
        for local, info in entry.items():
            chassis = info.get("chassis") or {}
            name = next(iter(chassis), "") if isinstance(chassis, dict) else ""
            port = (info.get("port") or {}).get("id") or {}
            out[local] = (name, str(port.get("value", "")) if isinstance(port, dict) else str(port))
    return out


def expected_neighbour(iface: Iface) -> tuple[str, str]:
    if iface.switch:
        return iface.switch, iface.switch_port_id
    return iface.peer_host or "", iface.peer_netdev or ""


def _switch_port_matches(expected: str, actual: str) -> bool:
    """Lab switches announce p<port>s<lane>r<root>; real ones name ports their own way:
    accept any port id whose numbers end with the planned port and lane."""
    if expected == actual:
        return True
    want = re.findall(r"\d+", expected)[:2]
    got = re.findall(r"\d+", actual)
    return len(got) >= 2 and got[-2:] == want if not actual.startswith("p") else False


def check_host(host: Host, seen: dict[str, tuple[str, str]]) -> list[Result]:
    results = []
    for iface in host.ifaces:
        want = expected_neighbour(iface)
        got = seen.get(iface.netdev)
        label = f"{iface.netdev} ({iface.port})"
        if got is None:
            results.append(
                Result(
                    "cabling",
                    host.name,
                    label,
                    f"{want[0]}:{want[1]}",
                    "-",
                    FAIL,
                    "missing: no LLDP neighbour (dead or unplugged cable)",
                )
            )
            continue
        match = got[0] == want[0] and (
            got[1] == want[1] or (iface.switch is not None and _switch_port_matches(want[1], got[1]))
        )
        detail = "" if match else "wrong neighbour: cable in the wrong port (swapped?)"
        results.append(
            Result(
                "cabling",
                host.name,
                label,
                f"{want[0]}:{want[1]}",
                f"{got[0]}:{got[1]}",
                PASS if match else FAIL,
                detail,
            )
        )
    return results
