"""Stand-ins for the plan's own addresses in a launch, put in their place before an engine judges it.

A launch's argv names the cluster's addresses (vLLM's `--master-addr`, SGLang's
`--dist-init-addr ADDR:PORT`), so two inventories that differ only in their Sparks' addresses
gave two argvs, two verdict keys and a start of the engine for each: a new inventory cost the
engine's import (7 s on two cores) though the engine's verdict could not differ. An engine's
parser takes these values as text (neither vLLM's nor SGLang's parse resolves or reaches them);
the resolver has already checked that each is an address.

So the oracle is asked about, and keeps its verdict for, the argv with each of the plan's IP
addresses replaced by a stand-in of the same family, numbered in the order the argv names them
(198.18.0.1, ... from the benchmarking block; 2001:db8::1, ... from the documentation block): one
address named twice is one stand-in, two addresses are two. A refusal that names a stand-in is
said with the address it stands for. Names that are not IP addresses stay as they are (a host
name could equal another flag's value).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from sparkfab.plan import Plan

_V4 = ipaddress.IPv4Address("198.18.0.0")
_V6 = ipaddress.IPv6Address("2001:db8::")


def plan_addresses(plan: Plan) -> frozenset[str]:
    """Every IP address the plan gives its Sparks and instances, as written there."""
    found: list[str] = []
    for h in plan.hosts:
        found += [h.mgmt_address, h.control_address]
        for i in h.ifaces:
            found += [i.address.split("/")[0], i.peer_address or ""]
    found += [inst.master_addr for inst in plan.instances]
    return frozenset(a for a in found if _ip(a) is not None)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _address_in(word: str, known: frozenset[str]) -> tuple[str, str, str] | None:
    """(before, address, after) where `word` is one of `known`, ADDR:PORT or [ADDR]:PORT."""
    if word in known:
        return "", word, ""
    if word.startswith("["):
        inside, bracket, rest = word[1:].partition("]")
        if bracket and inside in known:
            return "[", inside, "]" + rest
        return None
    host, colon, rest = word.partition(":")
    if colon and host in known and ":" not in rest:  # IPv4 ADDR:PORT (an IPv6 address has more colons)
        return "", host, ":" + rest
    return None


def stand_in(argv: Iterable[str], known: frozenset[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The argv with each of `known` it names replaced, and each stand-in's address."""
    given: dict[str, str] = {}  # address -> stand-in
    out = []
    for word in argv:
        found = _address_in(word, known)
        if found is None:
            out.append(word)
            continue
        before, addr, after = found
        if addr not in given:
            n = len(given) + 1
            given[addr] = str(_V4 + n) if ipaddress.ip_address(addr).version == 4 else str(_V6 + n)
        out.append(before + given[addr] + after)
    return tuple(out), {s: a for a, s in given.items()}


def said_with_addresses(text: str, back: dict[str, str]) -> str:
    """An engine's words about a judged argv, with each stand-in's address again (a whole
    address only: 198.18.0.1 is not the start of 198.18.0.12)."""
    if not back:
        return text
    alternatives = "|".join(re.escape(s) for s in sorted(back, key=len, reverse=True))
    return re.sub(rf"(?<![\w.:])({alternatives})(?!\w)(?!\.\d)", lambda m: back[m[1]], text)
