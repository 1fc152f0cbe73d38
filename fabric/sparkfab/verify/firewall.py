"""Who drops forwarded fabric traffic: base chains on the forward hook, read from `nft -j list ruleset`.

In nftables every base chain on a hook sees the packet, and a drop in any of them is final:
the accept in `inet sparkfab` does not override Docker's `ip filter FORWARD` policy DROP.
A drop-policy chain is harmless only where it accepts every pair of fabric netdevs itself,
or jumps to a chain that does (Docker's DOCKER-USER, where sparkfab puts its rules).
"""

from __future__ import annotations

from typing import Any

OWN_TABLE = ("inet", "sparkfab")


def _accepted_pairs(rules: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(in, out) netdev pairs that rules accept by exact iifname/oifname match."""
    pairs = set()
    for rule in rules:
        expr = rule.get("expr", [])
        if not any("accept" in e for e in expr):
            continue
        seen: dict[str, str] = {}
        for e in expr:
            m = e.get("match") if isinstance(e, dict) else None
            if m and m.get("op") in ("==", "in") and isinstance(m.get("right"), str):
                key = (m.get("left") or {}).get("meta", {}).get("key")
                if key in ("iifname", "oifname"):
                    seen[key] = m["right"]
        if "iifname" in seen and "oifname" in seen:
            pairs.add((seen["iifname"], seen["oifname"]))
    return pairs


def blockers(ruleset: dict[str, Any], pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(what drops forwarded fabric traffic, what drops it but lets the fabric through)."""
    items = ruleset.get("nftables", [])
    chains = [i["chain"] for i in items if "chain" in i]
    rules: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for i in items:
        if "rule" in i:
            r = i["rule"]
            rules.setdefault((r["family"], r["table"], r["chain"]), []).append(r)
    bad, bypassed = [], []
    for c in chains:
        if c.get("hook") != "forward" or c.get("policy") != "drop" or (c["family"], c["table"]) == OWN_TABLE:
            continue
        name = f"table {c['family']} {c['table']} chain {c['name']} (policy drop)"
        own = rules.get((c["family"], c["table"], c["name"]), [])
        reached = [own]
        for r in own:
            for e in r.get("expr", []):
                target = (e.get("jump") or e.get("goto") or {}).get("target") if isinstance(e, dict) else None
                if target:
                    reached.append(rules.get((c["family"], c["table"], target), []))
        accepted = set().union(*(_accepted_pairs(x) for x in reached))
        missing = [p for p in pairs if p not in accepted]
        if missing:
            bad.append(f"{name}: drops {missing[0][0]} -> {missing[0][1]} and {len(missing) - 1} more pair(s)")
        else:
            bypassed.append(name)
    return bad, bypassed
