"""Stage 4: every host's interfaces, addresses, peers, HCA lists and control plane."""

from __future__ import annotations

import ipaddress
from dataclasses import replace

from sparkfab import spark
from sparkfab.plan import SWITCHLESS, Host, Iface
from sparkfab.resolve.cables import Cable, End, switch_model, switch_port_id
from sparkfab.resolve.context import Ctx
from sparkfab.resolve.instances import ResolvedInstance
from sparkfab.resolve.rails import RailKey
from sparkfab.resolve.ranks import ring_routes


def resolve_hosts(
    ctx: Ctx,
    cables: list[Cable],
    subnets: dict[RailKey, ipaddress.IPv4Network],
    instances: list[ResolvedInstance],
) -> dict[str, Host]:
    ifaces = _ifaces(ctx, cables, subnets)
    where = {r.host: (i.name, i.topology, r) for i in instances for r in i.ranks}
    hosts = {}
    for name, hv in ctx.inv.hosts.items():
        mine = tuple(sorted(ifaces.get(name, []), key=lambda i: (i.root, i.port)))
        inst = where.get(name)
        hosts[name] = Host(
            name=name,
            mgmt_address=hv.ansible_host or name,
            mgmt_if=hv.mgmt_if,
            ifaces=mine,
            hca=_hca(mine),
            control_if=hv.mgmt_if,
            control_address=hv.ansible_host or name,
            instance=inst[0] if inst else None,
            rank=inst[2].rank if inst else None,
            ansible=dict(hv.ansible),
        )
    if ctx.inv.sparkfab.control_plane == "fabric":
        hosts = _fabric_control(ctx, hosts, instances)
    return hosts


def _ifaces(ctx: Ctx, cables: list[Cable], subnets: dict[RailKey, ipaddress.IPv4Network]) -> dict[str, list[Iface]]:
    out: dict[str, list[Iface]] = {}
    for c in cables:
        ends = [c.spark_end()] if c.switched else [c.a, c.b]
        for root in spark.ROOTS:
            key = RailKey(None, (c.b if c.b.switch else c.a).node, root) if c.switched else RailKey(c.index, None, root)
            net = subnets.get(key)
            if net is None:
                continue
            for e in ends:
                out.setdefault(e.node, []).append(_iface(ctx, c, e, root, key, net))
    return out


def _iface(ctx: Ctx, c: Cable, e: End, root: int, key: RailKey, net: ipaddress.IPv4Network) -> Iface:
    addr = _address(ctx, c, e, net)
    peer = None if c.switched else c.other(e.node, e.port)
    sw = (c.b if c.b.switch else c.a) if c.switched else None
    return Iface(
        netdev=spark.netdev(e.port, root),
        rdma=spark.rdma_device(e.port, root),
        pci=spark.pci_address(e.port, root),
        port=e.port,
        root=root,
        rail=key.name,
        subnet=str(net),
        address=f"{addr}/{net.prefixlen}",
        cable=c.index,
        peer_host=peer.node if peer else None,
        peer_port=peer.port if peer else None,
        peer_netdev=spark.netdev(peer.port, root) if peer else None,
        peer_address=str(_address(ctx, c, peer, net)) if peer else None,
        switch=sw.node if sw else None,
        switch_port=sw.port if sw else None,
        switch_port_id=switch_port_id(ctx.inv, sw.node, sw.sw_port, sw.lane) if sw else None,
    )


def _address(ctx: Ctx, c: Cable, e: End, net: ipaddress.IPv4Network) -> ipaddress.IPv4Address:
    """Host part: 1/2 by cable end on direct cables; from port and lane on a switch."""
    if c.switched:
        sw = c.b if c.b.switch else c.a
        lanes = switch_model(ctx.inv, sw.node).max_lanes
        host_part = 10 + (sw.sw_port - 1) * lanes + sw.lane
    else:
        host_part = 1 if e is c.a else 2
    if host_part >= net.num_addresses - 1:
        ctx.add(
            e.path,
            f"host part {host_part} does not fit in a /{net.prefixlen} rail",
            "use a shorter rail_prefix (e.g. 22) for switches with many lanes",
        )
        return net.network_address
    return net.network_address + host_part


def _hca(ifaces: tuple[Iface, ...]) -> dict[spark.LinkSpeed, tuple[str, ...]]:
    devices = sorted({i.rdma for i in ifaces}, key=spark.pci_sort_key)
    return {
        m: tuple(d for d in devices if spark.pci_sort_key(d)[0] in speed.roots) for m, speed in spark.SPEEDS.items()
    }


def _fabric_control(ctx: Ctx, hosts: dict[str, Host], instances: list[ResolvedInstance]) -> dict[str, Host]:
    for name, h in hosts.items():
        if not h.ifaces:
            continue
        rank = next((r for i in instances for r in i.ranks if r.host == name), None)
        port = rank.next_port if rank and rank.next_port else h.ifaces[0].port
        ctl = next(i for i in h.ifaces if i.port == port and i.root == 0)
        hosts[name] = replace(h, control_if=ctl.netdev, control_address=ctl.ip)
    for inst in instances:
        if inst.topology in SWITCHLESS:
            for host, routes in ring_routes(hosts, inst.ranks).items():
                hosts[host] = replace(hosts[host], routes=routes, forwarding=len(inst.ranks) >= 4)
    for name, h in hosts.items():
        if h.instance is None and not h.ifaces:
            ctx.add(
                ("all", "hosts", name),
                "control_plane is 'fabric' but this Spark has no fabric cable",
                "cable it, or use control_plane: management",
            )
    return hosts


# --------------------------------------------------------------------------- assemble
