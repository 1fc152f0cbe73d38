"""What lldpd heard on a host's netdevs, and the host's own chassis: the LLDP facts that verify's
cabling check, discover and the lab's drills read.

lldpcli is asked for `-f json0`, where every announced text is a JSON value: its `-f json` writes
a neighbour's system name as an object key without escaping it, so one neighbour whose name holds
a quote or a newline made the whole listing unreadable (lldpd 1.0.16, tried:
tests/data/captured/lldpcli-hostile-*). json0 escapes control bytes as \\u00XX except 0x1F, which
lldpd before 1.0.22 writes raw (its json_writer.c tested `c < 0x1f`; fixed upstream in 6f55f7a,
May 2026; Ubuntu 24.04 ships 1.0.18, Debian 12 1.0.16): a raw control byte inside a string is
accepted. `-f json`'s own shape (one item a dict, several a list) is read as well. A listing that
is still not JSON is no answer, never a crash."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sparkfab.facts import Fact
from sparkfab.facts.netdevs import LINKS, Link, links
from sparkfab.facts.remote import Answer
from sparkfab.lldp import frame as lf


class Neighbour(NamedTuple):
    system: str  # the system name it announces
    port: str  # its port id (lldpd as shipped: the netdev's MAC; after apply: its name)
    chassis: str = ""  # its chassis id (a MAC, as lldpd announces it by default)
    descr: str = ""  # its port description (lldpd's default: the interface's name)

    def __str__(self) -> str:
        return f"{self.system}:{self.port}"

    @classmethod
    def of_frame(cls, frame: lf.Frame) -> Neighbour:
        """What an LLDPDU says, as lldpd would list it (a MAC port id as aa:bb:..., texts with any
        byte that is not UTF-8 escaped)."""
        return cls(frame.text(frame.sys_name), frame.port_text, frame.chassis_text, frame.text(frame.port_descr))


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


def _value(items: Any) -> str:
    """json0's [{"value": V}] (or json's bare V) as text."""
    if isinstance(items, list):
        items = items[0] if items else ""
    if isinstance(items, dict):
        items = items.get("value", "")
    return "" if items is None or isinstance(items, (dict, list)) else str(items)


def _neighbours0(data: list[Any]) -> dict[str, list[Neighbour]]:
    """`lldpcli -f json0 show neighbors`: lists everywhere, the interface's name a value."""
    out: dict[str, list[Neighbour]] = {}
    for block in (b for b in data if isinstance(b, dict)):
        for info in (i for i in block.get("interface") or [] if isinstance(i, dict)):
            chassis = next((c for c in info.get("chassis") or [] if isinstance(c, dict)), {})
            port = next((p for p in info.get("port") or [] if isinstance(p, dict)), {})
            out.setdefault(_value(info.get("name")), []).append(
                Neighbour(
                    _value(chassis.get("name")),
                    _value(port.get("id")),
                    _value(chassis.get("id")),
                    _value(port.get("descr")),
                )
            )
    return out


class Unreadable(ValueError):
    """What lldpcli printed does not parse."""


def _load(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}", strict=False)  # strict=False: lldpd's raw 0x1F (see above)
    except ValueError:
        raise Unreadable(f"lldpcli printed what is not JSON: {text[:80]!r}") from None
    return data if isinstance(data, dict) else {}


def neighbours(lldpcli_json: str) -> dict[str, list[Neighbour]]:
    """`lldpcli -f json0 show neighbors` (or `-f json`) -> {local interface: every neighbour it
    heard}. Raises Unreadable on a listing that is not JSON."""
    data = _load(lldpcli_json).get("lldp") or {}
    if isinstance(data, list):
        return _neighbours0(data)
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
    """`lldpcli -f json0 show chassis` (or `-f json`) -> the host's own system name and chassis id
    (what its twins announce to each other), to be left out of what a netdev hears."""
    data = _load(lldpcli_json).get("local-chassis") or {}
    if isinstance(data, list):
        block = next((b for b in data if isinstance(b, dict)), {})
        chassis = next((c for c in block.get("chassis") or [] if isinstance(c, dict)), {})
        return {x for x in (_value(chassis.get("name")), _value(chassis.get("id"))) if x}
    return {x for x in _chassis(data) if x}


@dataclass(frozen=True)
class Heard:
    """What a host's lldpd says: whether it answered, the host's netdevs (their carrier and MACs),
    its own chassis (its twins hear it), and every neighbour each netdev heard."""

    answered: bool
    links: dict[str, Link] | None = None  # None: `ip` gave no readable listing
    own: frozenset[str] = frozenset()
    ports: dict[str, list[Neighbour]] = field(default_factory=dict)
    unreadable: str = ""  # why lldpcli's listing could not be read (answered, but nothing known)

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
    try:
        return Heard(True, found, frozenset(local_chassis(chassis)), neighbours(heard))
    except Unreadable as exc:
        return Heard(True, found, unreadable=str(exc))


#: the netdevs' carrier, the host's own chassis, then what lldpd heard (the command's exit status
#: is lldpcli's: lldpd not running fails it)
NEIGHBOURS = Fact(
    "neighbours",
    lambda: f"{LINKS.command()}; echo @@; lldpcli -f json0 show chassis; echo @@; lldpcli -f json0 show neighbors",
    _heard,
)
