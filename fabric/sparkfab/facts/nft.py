"""Facts of a host's nftables: whether sparkfab's table is loaded, and the whole ruleset (who else
hooks forwarding: Docker's chains, a site's firewall)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sparkfab.facts import Fact
from sparkfab.facts.remote import Answer

#: sparkfab's table is loaded
TABLE = Fact("nft-table", lambda: "nft list table inet sparkfab", lambda a: a.rc == 0)


@dataclass(frozen=True)
class Ruleset:
    """`nft -j list ruleset` as a document; empty, with nft's last words, when it could not be read."""

    document: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def _ruleset(answer: Answer) -> Ruleset:
    try:
        doc = json.loads(answer.stdout) if answer.rc == 0 else {}
    except ValueError:
        doc = {}
    if not isinstance(doc, dict) or not doc:
        return Ruleset({}, answer.stderr[-200:])
    return Ruleset(doc)


#: the whole ruleset, every table and base chain
RULESET = Fact("nft-ruleset", lambda: "nft -j list ruleset", _ruleset)
