"""Stage 2: one subnet per rail (cable and PCIe root, or switch and root), explicit ones first."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sparkfab import spark
from sparkfab.inventory import path_text
from sparkfab.resolve.cables import Cable
from sparkfab.resolve.context import SF, Ctx

# ---------------------------------------------------------------------------- subnets


@dataclass(frozen=True)
class RailKey:
    cable: int | None
    switch: str | None
    root: int

    @property
    def name(self) -> str:
        return f"{self.switch}-r{self.root}" if self.switch else f"c{self.cable}-r{self.root}"


def allocate(ctx: Ctx, cables: list[Cable]) -> dict[RailKey, ipaddress.IPv4Network]:
    sf = ctx.inv.sparkfab
    explicit = _explicit_subnets(ctx, cables)
    out = dict(explicit)
    taken = list(explicit.values())
    pool = sf.subnet_pool.subnets(new_prefix=sf.rail_prefix) if sf.subnet_pool.prefixlen <= sf.rail_prefix else iter(())
    needed = [k for k in _rail_keys(cables) if k not in out]
    for key in needed:
        net = next((n for n in pool if not any(n.overlaps(t) for t in taken)), None)
        if net is None:
            size = 2 ** (sf.rail_prefix - sf.subnet_pool.prefixlen) if sf.rail_prefix >= sf.subnet_pool.prefixlen else 0
            ctx.add(
                SF + ("subnet_pool",),
                f"subnet_pool {sf.subnet_pool} is too small: it holds {size} "
                f"/{sf.rail_prefix} rails, the cables need {len(needed) + len(explicit)}",
                "use a larger pool (e.g. a /16) or a longer rail_prefix",
            )
            break
        out[key] = net
        taken.append(net)
    _management_outside(ctx, out)
    return out


def _management_outside(ctx: Ctx, rails: dict[RailKey, ipaddress.IPv4Network]) -> None:
    """A rail's subnet must not hold a management address: the fabric's routes would take the
    traffic meant for the management network (ssh, MASTER_ADDR) onto a cable."""
    for host, hv in ctx.inv.hosts.items():
        try:
            addr = ipaddress.ip_address(hv.ansible_host or "")
        except ValueError:
            continue  # a host name, or no address
        for key, net in rails.items():
            if addr.version == 4 and addr in net:
                ctx.add(
                    ("all", "hosts", host, "ansible_host"),
                    f"{addr} is inside rail {key.name}'s subnet {net}: the fabric would route the management traffic",
                    "choose a subnet_pool (or cable subnets) apart from the management network",
                )
                break


def _rail_keys(cables: list[Cable]) -> Iterator[RailKey]:
    seen: set[RailKey] = set()
    for c in cables:
        for root in spark.ROOTS:
            key = (
                RailKey(None, c.b.node if c.b.switch else c.a.node, root)
                if c.switched
                else RailKey(c.index, None, root)
            )
            if key not in seen:
                seen.add(key)
                yield key


def _explicit_subnets(ctx: Ctx, cables: list[Cable]) -> dict[RailKey, ipaddress.IPv4Network]:
    sf = ctx.inv.sparkfab
    found: list[tuple[RailKey, ipaddress.IPv4Network, tuple[Any, ...]]] = []
    for i, c in enumerate(sf.cables):
        if c.subnets is not None:
            found += _subnet_list(ctx, c.subnets, SF + ("cables", i, "subnets"), lambda r, i=i: RailKey(i, None, r))
    for name, sw in sf.switches.items():
        if sw.subnets is not None:
            found += _subnet_list(
                ctx, sw.subnets, SF + ("switches", name, "subnets"), lambda r, n=name: RailKey(None, n, r)
            )
    for j, (_, net, path) in enumerate(found):
        for _, net2, path2 in found[:j]:
            if net.overlaps(net2):
                ctx.add(path, f"subnet {net} overlaps {net2} ({path_text(path2)})", "every rail needs its own subnet")
    return {k: n for k, n, _ in found}


def _subnet_list(ctx: Ctx, nets: list[ipaddress.IPv4Network], path: tuple[Any, ...], key: Any) -> list[Any]:
    if len(nets) != 2:
        ctx.add(
            path,
            f"lists {len(nets)} subnet(s); a cable carries two rails (one per PCIe root)",
            "give exactly two subnets: [root-0 rail, root-1 rail]",
        )
        return []
    if nets[0] == nets[1]:
        ctx.add(
            path,
            f"twins on one subnet: both PCIe roots would use {nets[0]}",
            "the two twins of a port must sit on different subnets (routing ambiguity)",
        )
        return []
    prefix = ctx.inv.sparkfab.rail_prefix
    bad = [n for n in nets if n.prefixlen != prefix]
    for n in bad:
        ctx.add(
            path,
            f"subnet {n} is a /{n.prefixlen}, the rails of this cluster are /{prefix}",
            f"NCCL_IB_SUBNET_PREFIX_LEN is one value per host: set rail_prefix or use /{prefix} subnets",
        )
    return [] if bad else [(key(r), n, path + (r,)) for r, n in enumerate(nets)]
