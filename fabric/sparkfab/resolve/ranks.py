"""Rank order for direct-cabled instances (pair, triangle, ring) and switched ones, and the
static control-plane routes of a ring.

Ranks follow the cables: rank 0 is the head, rank 1 the neighbour reached through the
head's first-listed cable (or the host given rank 1), and so on around the cycle. Port
orientation does not matter (the ring of the four-Spark write-up mixes p0/p1): only the
cycle does.
"""

from __future__ import annotations

import ipaddress
from collections import deque

from sparkfab.plan import Host, Rank, Route, Topology
from sparkfab.resolve.cables import Cable


class RingError(Exception):
    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


Link = tuple[int, str, str, str]  # cable index, my port, peer host, peer port


def adjacency(hosts: list[str], cables: list[Cable]) -> dict[str, list[Link]]:
    adj: dict[str, list[Link]] = {h: [] for h in hosts}
    for c in sorted(cables, key=lambda c: c.index):
        adj[c.a.node].append((c.index, c.a.port, c.b.node, c.b.port))
        adj[c.b.node].append((c.index, c.b.port, c.a.node, c.a.port))
    return adj


def order_ring(
    hosts: list[str], head: str, cables: list[Cable], given: dict[str, int | None], tp: int
) -> tuple[Topology, list[Rank]]:
    adj = adjacency(hosts, cables)
    if len(hosts) > 2:
        _check_same_neighbour(adj)
    _check_connected(hosts, head, adj)
    if len(hosts) == 2:
        return "pair", _pair(head, adj)
    _check_ring(adj)
    order = _walk(head, adj, given)
    _check_given(order, given)
    ranks = []
    n = len(order)
    for r, host in enumerate(order):
        nxt, prv = order[(r + 1) % n], order[r - 1]
        ranks.append(Rank(r, host, prv, nxt, _port_to(adj, host, prv), _port_to(adj, host, nxt)))
    return ("triangle" if n == 3 else "ring"), ranks


def _check_connected(hosts: list[str], head: str, adj: dict[str, list[Link]]) -> None:
    seen, todo = {head}, deque([head])
    while todo:
        for _, _, peer, _ in adj[todo.popleft()]:
            if peer not in seen:
                seen.add(peer)
                todo.append(peer)
    lost = [h for h in hosts if h not in seen]
    if lost:
        raise RingError(
            f"the instance is not connected by one fabric: {', '.join(lost)} "
            f"cannot be reached from {head} over its cables",
            "cable every Spark of an instance into one pair, triangle, ring or switch",
        )


def _pair(head: str, adj: dict[str, list[Link]]) -> list[Rank]:
    links = adj[head]
    other = links[0][2]
    back = adj[other]
    return [
        Rank(0, head, other, other, links[-1][1], links[0][1]),
        Rank(1, other, head, head, back[-1][1], back[0][1]),
    ]


def _check_same_neighbour(adj: dict[str, list[Link]]) -> None:
    for host, links in adj.items():
        if len(links) == 2 and links[0][2] == links[1][2]:
            raise RingError(
                f"{host}'s two ports both reach {links[0][2]} (cables[{links[0][0]}] and "
                f"cables[{links[1][0]}]): a ring needs two different neighbours",
                f"move cables[{links[1][0]}] to the next Spark of the ring",
            )


def _check_ring(adj: dict[str, list[Link]]) -> None:
    free = [(h, links) for h, links in adj.items() if len(links) < 2]
    if free:
        ends = [f"{h}:{_free_port(links)}" for h, links in free]
        breaker = ", ".join(f"cables[{links[0][0]}]" for _, links in free if links)
        hint = (
            f"a cable [{ends[0]}, {ends[1]}] would close it"
            if len(ends) == 2
            else "every Spark of a ring has two cables, to two different neighbours"
        )
        raise RingError(
            f"the ring does not close: {', '.join(ends)} have no cable inside the "
            f"instance (the line ends at {breaker})",
            hint,
        )


def _free_port(links: list[Link]) -> str:
    used = {port for _, port, _, _ in links}
    return next(p for p in ("p0", "p1") if p not in used)


def _walk(head: str, adj: dict[str, list[Link]], given: dict[str, int | None]) -> list[str]:
    first = next((peer for _, _, peer, _ in adj[head] if given.get(peer) == 1), adj[head][0][2])
    order = [head, first]
    while True:
        cur, prev = order[-1], order[-2]
        nxt = next(peer for _, _, peer, _ in adj[cur] if peer != prev)
        if nxt == head:
            return order
        order.append(nxt)


def _check_given(order: list[str], given: dict[str, int | None]) -> None:
    wrong = [
        f"{h} has rank {given[h]} but the cables put it at rank {order.index(h)}"
        for h in order
        if given.get(h) is not None and given[h] != order.index(h)
    ]
    if wrong:
        raise RingError(
            "; ".join(wrong),
            "ranks follow the cables: drop the rank keys, or re-cable "
            "(cable order around the ring: " + " -> ".join(order) + ")",
        )


def _port_to(adj: dict[str, list[Link]], host: str, peer: str) -> str:
    return next(port for _, port, p, _ in adj[host] if p == peer)


def order_switched(hosts: list[str], head: str, given: dict[str, int | None]) -> list[Rank]:
    if len(given) == len(hosts) and sorted(v for v in given.values() if v is not None) == list(range(len(hosts))):
        order = sorted(hosts, key=lambda h: given[h] or 0)
    else:
        i = hosts.index(head)
        order = hosts[i:] + hosts[:i]
    n = len(order)
    return [Rank(r, h, order[r - 1], order[(r + 1) % n], None, None) for r, h in enumerate(order)]


def ring_routes(hosts: dict[str, Host], ranks: list[Rank]) -> dict[str, tuple[Route, ...]]:
    """Host routes to every control address that is not on a connected subnet.

    Each goes to the neighbour in the shorter direction; a tie (opposite Spark on an even
    ring) goes forward, so the two directions of that pair differ and rp_filter must be
    loose. Transit Sparks keep going in the same direction, never back.

    Every route carries this host's control address as its preferred source. Without it an
    unbound connection leaves with the address of the egress netdev; on a backward route
    that address sits on a cable the far end has no route to, and the reply is lost
    (rings of five and more). With it, every packet's source is a control address, and
    every Spark has a way to every control address.
    """
    n = len(ranks)
    out: dict[str, tuple[Route, ...]] = {}
    for me in ranks:
        h = hosts[me.host]
        nets = [ipaddress.IPv4Interface(i.address).network for i in h.ifaces]
        routes = []
        for other in ranks:
            if other.rank == me.rank:
                continue
            target = ipaddress.IPv4Address(hosts[other.host].control_address)
            if any(target in net for net in nets):
                continue
            d = (other.rank - me.rank) % n
            forward = d <= n / 2
            port = me.next_port if forward else me.prev_port
            iface = next(i for i in h.ifaces if i.port == port and i.root == 0)
            assert iface.peer_address is not None
            hops = d if forward else n - d
            routes.append(Route(f"{target}/32", iface.peer_address, iface.netdev, hops, h.control_address))
        out[me.host] = tuple(routes)
    return out
