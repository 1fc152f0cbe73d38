"""Facts of a host's netdevs: what `ip` and sysfs say of them."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from sparkfab.facts import Fact
from sparkfab.facts.remote import Answer


@dataclass(frozen=True)
class Link:
    """A netdev as `ip -j link show` describes it."""

    name: str
    flags: tuple[str, ...]
    mtu: int | None
    operstate: str
    address: str = ""  # its MAC (lldpd's port id as shipped)

    @property
    def up(self) -> bool:
        return "UP" in self.flags

    @property
    def carrier(self) -> bool:
        """The far end is there: the link is up at both ends (a pulled cable clears it)."""
        return "LOWER_UP" in self.flags


def links(text: str) -> dict[str, Link]:
    """`ip -j link show` -> {netdev: Link}; raises ValueError on anything else."""
    rows = json.loads(text or "[]")
    if not isinstance(rows, list):
        raise ValueError("ip -j link show did not print a list")
    return {
        str(x["ifname"]): Link(
            str(x["ifname"]),
            tuple(str(f) for f in x.get("flags", [])),
            x.get("mtu") if isinstance(x.get("mtu"), int) else None,
            str(x.get("operstate", "?")),
            str(x.get("address", "")).lower(),
        )
        for x in rows
        if isinstance(x, dict) and "ifname" in x
    }


def _ok(answer: Answer, what: str) -> str:
    """The answer's output; a failed command raises, naming the fact."""
    if answer.rc != 0:
        raise RuntimeError(f"{what} failed (exit {answer.rc}): {answer.stderr.strip()[-200:]}")
    return answer.stdout


#: every netdev: flags, MTU, state, MAC
LINKS = Fact("links", lambda: "ip -j link show", lambda a: links(_ok(a, "ip -j link show")))


def _addresses(answer: Answer) -> dict[str, list[str]]:
    rows = json.loads(_ok(answer, "ip -j -4 addr show") or "[]")
    return {
        str(x["ifname"]): sorted(f"{a['local']}/{a['prefixlen']}" for a in x.get("addr_info", []))
        for x in rows
        if isinstance(x, dict) and "ifname" in x
    }


#: every netdev's IPv4 addresses, as address/prefix, sorted
ADDRESSES = Fact("addresses", lambda: "ip -j -4 addr show", _addresses)


def _speeds_command(names: list[str]) -> str:
    words = " ".join(shlex.quote(n) for n in names)
    return f'for i in {words}; do echo "$i $(cat /sys/class/net/$i/speed 2>/dev/null || echo -)"; done'


def _speeds(answer: Answer) -> dict[str, int | str]:
    rows = (line.split() for line in answer.stdout.splitlines() if line.strip())
    return {r[0]: int(r[1]) if r[1].lstrip("-").isdigit() else r[1] for r in rows if len(r) == 2}


#: the netdevs' speeds in Mb/s as the driver reports them ("-" where it reports none)
SPEEDS = Fact("speeds", _speeds_command, _speeds)


def _drivers_command(names: list[str]) -> str:
    words = " ".join(shlex.quote(n) for n in names)
    return (
        f"for i in {words}; do d=/sys/class/net/$i; "
        'drv=$(readlink "$d/device/driver" 2>/dev/null || echo -); '
        'echo "$i $(cat "$d/address" 2>/dev/null || echo -) ${drv##*/}"; done'
    )


def _drivers(answer: Answer) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in answer.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]] = {k: v for k, v in (("macaddress", parts[1]), ("driver", parts[2])) if v not in ("-", "")}
    return out


#: each netdev's MAC address and driver, what a netplan `match:` compares
DRIVERS = Fact("drivers", _drivers_command, _drivers)


def _route(answer: Answer) -> dict[str, Any]:
    try:
        info = json.loads(answer.stdout)[0] if answer.rc == 0 else {}
    except (ValueError, IndexError, KeyError):
        info = {}
    return info if isinstance(info, dict) else {}


#: the route the host takes to an address (`dev`, `gateway`, `prefsrc`); empty when it has none
ROUTE = Fact("route", lambda dst: f"ip -j route get {shlex.quote(dst)}", _route)
