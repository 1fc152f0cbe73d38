"""verify's firewall check (`verify.firewall`): the chains that drop the control plane's forwarded
pairs, read from nft's JSON as Docker leaves it."""

from __future__ import annotations

from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


def _chain(table, name, **kw):
    return {"chain": {"family": "ip", "table": table, "name": name, **kw}}


def _rule(table, chain, *expr):
    return {"rule": {"family": "ip", "table": table, "chain": chain, "expr": list(expr)}}


def _pair(a, b):
    meta = lambda key, v: {"match": {"op": "==", "left": {"meta": {"key": key}}, "right": v}}  # noqa: E731
    return [meta("iifname", a), meta("oifname", b), {"counter": {}}, {"accept": None}]


def test_forward_blockers_read_docker_user():
    """Docker's FORWARD drop is harmless only where DOCKER-USER accepts every fabric pair."""
    from sparkfab.verify import firewall

    pairs = [("a", "b"), ("b", "a")]
    docker = [
        _chain("filter", "FORWARD", hook="forward", policy="drop"),
        _chain("filter", "DOCKER-USER"),
        _rule("filter", "FORWARD", {"counter": {}}, {"jump": {"target": "DOCKER-USER"}}),
    ]
    ours = {"chain": {"family": "inet", "table": "sparkfab", "name": "forward", "hook": "forward", "policy": "drop"}}
    bad, ok = firewall.blockers({"nftables": [*docker, ours]}, pairs)
    assert bad == ["table ip filter chain FORWARD (policy drop): drops a -> b and 1 more pair(s)"] and ok == []
    half = [*docker, _rule("filter", "DOCKER-USER", *_pair("a", "b"))]
    assert firewall.blockers({"nftables": half}, pairs)[0][0].endswith("drops b -> a and 0 more pair(s)")
    full = [*half, _rule("filter", "DOCKER-USER", *_pair("b", "a"))]
    assert firewall.blockers({"nftables": full}, pairs) == ([], ["table ip filter chain FORWARD (policy drop)"])
    assert firewall.blockers({"nftables": [_chain("filter", "FORWARD", hook="forward", policy="accept")]}, pairs) == (
        [],
        [],
    )
