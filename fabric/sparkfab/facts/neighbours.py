"""What lldpd heard on a host's netdevs, and the host's own chassis: the LLDP facts that verify's
cabling check, discover and the lab's drills read (`lldpcli -f json`, whose shape changes with
the count: one item is a dict, several a list)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sparkfab.facts import Fact
from sparkfab.facts.netdevs import LINKS, Link, links
from sparkfab.facts.remote import Answer


class Neighbour(NamedTuple):
    system: str  # the system name it announces
    port: str  # its port id (lldpd as shipped: the netdev's MAC; after apply: its name)
    chassis: str = ""  # its chassis id (a MAC, as lldpd announces it by default)
    descr: str = ""  # its port description (lldpd's default: the interface's name)

    def __str__(self) -> str:
        return f"{self.system}:{self.port}"


def _entries(value: Any) -> list[dict[str, Any]]:
    """lldpcli writes a dict instead of a list when there is one item: always a list of dicts."""
    if isinstance(value, dict):
        return [{k: v} for k, v in value.items()]
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _chassis(info: dict[str, Any]) -> tuple[str, str]:
    """(system name, chassis id) of a neighbour's or the local chassis block."""
    for entry in _entries(info.get("chassis") or {}):
        for name, body in entry.items():
            cid = (body.get("id") or {}) if isinstance(body, dict) else {}
            return str(name), str(cid.get("value", "")) if isinstance(cid, dict) else ""
    return "", ""


def neighbours(lldpcli_json: str) -> dict[str, list[Neighbour]]:
    """`lldpcli -f json show neighbors` -> {local interface: every neighbour it heard}."""
    data = json.loads(lldpcli_json or "{}").get("lldp") or {}
    out: dict[str, list[Neighbour]] = {}
    for entry in _entries(data.get("interface") or []):
        for local, info in entry.items():
            if not isinstance(info, dict):
                continue
            system, cid = _chassis(info)
            port = info.get("port") or {}
            ident = port.get("id") or {} if isinstance(port, dict) else port
            pid = str(ident.get("value", "")) if isinstance(ident, dict) else str(ident)
            descr = str(port.get("descr", "")) if isinstance(port, dict) else ""
            out.setdefault(local, []).append(Neighbour(system, pid, cid, descr))
    return out


def local_chassis(lldpcli_json: str) -> set[str]:
    """`lldpcli -f json show chassis` -> the host's own system name and chassis id (what its
    twins announce to each other), to be left out of what a netdev hears."""
    data = json.loads(lldpcli_json or "{}").get("local-chassis") or {}
    return {x for x in _chassis(data) if x}


@dataclass(frozen=True)
class Heard:
    """What a host's lldpd says: whether it answered, the host's netdevs (their carrier and MACs),
    its own chassis (its twins hear it), and every neighbour each netdev heard."""

    answered: bool
    links: dict[str, Link] | None = None  # None: `ip` gave no readable listing
    own: frozenset[str] = frozenset()
    ports: dict[str, list[Neighbour]] = field(default_factory=dict)

    @property
    def carrier(self) -> frozenset[str] | None:
        """The netdevs with carrier (None: not known)."""
        return None if self.links is None else frozenset(n for n, link in self.links.items() if link.carrier)


def _heard(answer: Answer) -> Heard:
    if answer.rc != 0:
        return Heard(False)
    listing, _, rest = answer.stdout.partition("@@")
    chassis, _, heard = rest.partition("@@")
    try:
        found: dict[str, Link] | None = links(listing)
    except ValueError:
        found = None
    return Heard(True, found, frozenset(local_chassis(chassis)), neighbours(heard))


#: the netdevs' carrier, the host's own chassis, then what lldpd heard (the command's exit status
#: is lldpcli's: lldpd not running fails it)
NEIGHBOURS = Fact(
    "neighbours",
    lambda: f"{LINKS.command()}; echo @@; lldpcli -f json show chassis; echo @@; lldpcli -f json show neighbors",
    _heard,
)
