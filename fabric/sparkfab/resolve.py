"""Validate an inventory's meaning and resolve it into a Plan, collecting every problem.

Order of work: parse cable ends -> allocate subnets -> check switches -> resolve each
instance's topology and ranks -> addresses, peers, HCA lists, control plane.
Allocation is stable: rails are numbered in file order of first use (explicit subnets are
reserved first), and a Spark's host part on a switch comes from its switch port and lane,
so appending a cable or a Spark never renumbers what exists.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkfab import catalog, spark
from sparkfab.errors import InventoryError, Problem, RenderError
from sparkfab.inventory import Inventory, line_of, path_text, split_end, walk
from sparkfab.launchers import Recipe, vllm_version
from sparkfab.plan import Host, Iface, Instance, Plan, Rail, Rank, Switch
from sparkfab.topology import RingError, order_ring, order_switched, ring_routes

_SW_PORT = re.compile(r"^(\d+)(?:/(\d+))?$")


@dataclass(frozen=True)
class End:
    node: str
    port: str  # p0/p1, or "P/L" on a switch
    switch: bool
    path: tuple[Any, ...]
    sw_port: int = 0
    lane: int = 0


@dataclass(frozen=True)
class Cable:
    index: int
    a: End
    b: End

    @property
    def switched(self) -> bool:
        return self.a.switch or self.b.switch

    def spark_end(self) -> End:
        return self.b if self.a.switch else self.a

    def other(self, host: str, port: str) -> End:
        return self.b if (self.a.node, self.a.port) == (host, port) else self.a


@dataclass
class Ctx:
    inv: Inventory
    raw: Any
    problems: list[Problem] = field(default_factory=list)
    #: folders of launch recipes, sparkfab's own first (`launchers.search_path`)
    recipe_dirs: tuple[Path, ...] | None = None

    def recipes(self) -> dict[str, Recipe]:
        from sparkfab.launchers import recipes

        return recipes(self.recipe_dirs)

    def add(self, path: tuple[Any, ...], message: str, hint: str = "") -> None:
        self.problems.append(Problem(path_text(path), message, hint, line_of(self.raw, path)))


SF = ("all", "vars", "sparkfab")


def resolve(
    inv: Inventory, raw: Any = None, earlier: list[Problem] | None = None, recipe_dirs: tuple[Path, ...] | None = None
) -> Plan:
    ctx = Ctx(inv, raw, list(earlier or []), recipe_dirs)
    _check_names_and_ports(ctx)
    cables = _parse_cables(ctx)
    subnets = _allocate(ctx, cables)
    _check_switches(ctx, cables)
    instances = _instances(ctx, cables)
    if ctx.problems:
        raise InventoryError(ctx.problems, inv.source)
    hosts = _hosts(ctx, cables, subnets, instances)
    if ctx.problems:
        raise InventoryError(ctx.problems, inv.source)
    return _assemble(ctx, cables, subnets, hosts, instances)


# ----------------------------------------------------------------------------- names

#: Entries of a rendered tree beside the host directories: a host must not be named like one.
RESERVED_NAMES = ("inventory.yml", "host_vars", "bundles", "all", "ungrouped", "localhost")


def _check_names_and_ports(ctx: Ctx) -> None:
    sf = ctx.inv.sparkfab
    for name in ctx.inv.hosts:
        if name.lower() in RESERVED_NAMES:
            ctx.add(
                ("all", "hosts", name),
                f"host name '{name}' is reserved (an entry of the rendered tree or an Ansible group)",
                "name the Spark by its hostname, e.g. spark-3d38",
            )
    for name in sf.switches:
        if name in ctx.inv.hosts:
            ctx.add(SF + ("switches", name), f"switch '{name}' has the name of a host", "give the switch its own name")
    engine = {sf.master_port: "master_port", sf.master_port + 1: "master_port + 1 (verify --collective)"}
    for name, inst in sf.instances.items():
        if inst.port in engine:
            ctx.add(
                SF + ("instances", name, "port"),
                f"API port {inst.port} is taken by {engine[inst.port]}",
                "choose another port, e.g. 8000",
            )


# ----------------------------------------------------------------------------- cables


def _parse_cables(ctx: Ctx) -> list[Cable]:
    cables: list[Cable] = []
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(ctx.inv.sparkfab.cables):
        ends = [_parse_end(ctx, e, _end_path(ctx, i, j)) for j, e in enumerate(c.ends)]
        if None in ends:
            continue
        a, b = ends[0], ends[1]
        assert a is not None and b is not None
        if a.node == b.node:
            ctx.add(
                SF + ("cables", i),
                f"cable from {a.node} to itself ({a.port} - {b.port})",
                "a cable joins two different Sparks, or a Spark and a switch",
            )
            continue
        if a.switch and b.switch:
            ctx.add(
                SF + ("cables", i),
                f"cable between two switches ({a.node}, {b.node})",
                "sparkfab plans Spark-to-Spark and Spark-to-switch cables only",
            )
            continue
        dup = [e for e in (a, b) if (e.node, e.port) in seen]
        for e in dup:
            first = seen[(e.node, e.port)]
            what = "lane" if e.switch else "port"
            ctx.add(
                e.path,
                f"{what} {e.node}:{e.port} is used twice (cables[{first}] and cables[{i}])",
                "one cable per port; remove or move one of them",
            )
        for e in (a, b):
            seen.setdefault((e.node, e.port), i)
        if not dup:
            cables.append(Cable(i, a, b))
    return cables


def _end_path(ctx: Ctx, i: int, j: int) -> tuple[Any, ...]:
    raw_cable = walk(ctx.raw, SF + ("cables", i))
    return SF + ("cables", i, j) if isinstance(raw_cable, list) or raw_cable is None else SF + ("cables", i, "ends", j)


def _parse_end(ctx: Ctx, text: str, path: tuple[Any, ...]) -> End | None:
    node, port = split_end(text)
    if node in ctx.inv.hosts:
        if port not in spark.PORTS:
            ctx.add(path, f"{text} — a Spark has ports p0 and p1", "p0 is the QSFP cage next to the RJ-45 port")
            return None
        return End(node, port, False, path)
    if node in ctx.inv.sparkfab.switches:
        return _parse_switch_end(ctx, text, node, port, path)
    known = sorted(ctx.inv.hosts) + sorted(ctx.inv.sparkfab.switches)
    ctx.add(path, f"{text} — '{node}' is neither a host nor a switch of this inventory", _close(node, known))
    return None


def _parse_switch_end(ctx: Ctx, text: str, node: str, port: str, path: tuple[Any, ...]) -> End | None:
    m = _SW_PORT.match(port)
    model = switch_model(ctx.inv, node)
    if not m or not model.has_port(int(m.group(1))):
        ctx.add(
            path,
            f"{text} — {node} ({model.name}) has ports 1-{model.port_count}",
            "write a switch end as SWITCH:PORT/LANE, e.g. sw1:2/1",
        )
        return None
    sw_port = int(m.group(1))
    lane_gbps = catalog.LANE_GBPS[ctx.inv.sparkfab.link_speed]
    lanes = model.lanes(sw_port, lane_gbps)
    lane = int(m.group(2)) if m.group(2) else (1 if lanes == 1 else 0)
    if lane == 0:
        ctx.add(
            path,
            f"{text} — port {sw_port} breaks out into {lanes} lanes at {lane_gbps}G: name the lane",
            f"e.g. {node}:{sw_port}/1",
        )
        return None
    if not 1 <= lane <= lanes:
        ctx.add(
            path,
            f"{text} — lane {lane} is beyond the breakout: port {sw_port} of {node} has "
            f"{lanes} lane(s) at {lane_gbps}G",
            _breakout_hint(model, lane_gbps),
        )
        return None
    return End(node, f"{sw_port}/{lane}", True, path, sw_port, lane)


def _breakout_hint(model: catalog.SwitchModel, lane_gbps: int) -> str:
    return (
        f"{model.name} carries {model.capacity(lane_gbps)} Sparks at {lane_gbps}G "
        f"(400G ports break out 2x200G or 4x100G)"
    )


def switch_model(inv: Inventory, name: str) -> catalog.SwitchModel:
    sw = inv.sparkfab.switches[name]
    if sw.model == "generic":
        return catalog.generic(sw.ports or 32, sw.speed or 400)
    return catalog.MODELS[sw.model]


def _close(word: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else f"known: {', '.join(known)}"


# ---------------------------------------------------------------------------- subnets


@dataclass(frozen=True)
class RailKey:
    cable: int | None
    switch: str | None
    root: int

    @property
    def name(self) -> str:
        return f"{self.switch}-r{self.root}" if self.switch else f"c{self.cable}-r{self.root}"


def _allocate(ctx: Ctx, cables: list[Cable]) -> dict[RailKey, ipaddress.IPv4Network]:
    sf = ctx.inv.sparkfab
    explicit = _explicit_subnets(ctx, cables)
    out = dict(explicit)
    taken = list(explicit.values())
    pool = sf.subnet_pool.subnets(new_prefix=sf.rail_prefix) if sf.subnet_pool.prefixlen <= sf.rail_prefix else iter(())
    needed = [k for k in _rail_keys(cables) if k not in out]
    for key in needed:
        net = next((n for n in pool if not any(n.overlaps(t) for t in taken)), None)
        if net is None:
            size = max(0, 2 ** (sf.rail_prefix - sf.subnet_pool.prefixlen))
            ctx.add(
                SF + ("subnet_pool",),
                f"subnet_pool {sf.subnet_pool} is too small: it holds {size} "
                f"/{sf.rail_prefix} rails, the cables need {len(needed) + len(explicit)}",
                "use a larger pool (e.g. a /16) or a longer rail_prefix",
            )
            break
        out[key] = net
        taken.append(net)
    return out


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


def _check_switches(ctx: Ctx, cables: list[Cable]) -> None:
    sf = ctx.inv.sparkfab
    lane_gbps = catalog.LANE_GBPS[sf.link_speed]
    for name in sf.switches:
        model = switch_model(ctx.inv, name)
        ends = [c for c in cables if c.switched and (c.a.node == name or c.b.node == name)]
        wired = sum(1 for c in sf.cables for e in c.ends if split_end(e)[0] == name)
        cap = model.capacity(lane_gbps)
        if wired > cap:
            ctx.add(
                SF + ("switches", name),
                f"{wired} Sparks on {name} ({model.name}) but it carries {cap} at {lane_gbps}G",
                _breakout_hint(model, lane_gbps),
            )
        per_host: dict[str, list[int]] = {}
        for c in ends:
            per_host.setdefault(c.spark_end().node, []).append(c.index)
        for host, idx in per_host.items():
            if len(idx) > 1:
                ctx.add(
                    SF + ("cables", idx[1]),
                    f"{host} has {len(idx)} cables to {name} (cables{idx})",
                    "cable one port per Spark to a switch; its twins carry both rails",
                )


# -------------------------------------------------------------------------- instances


def _instances(ctx: Ctx, cables: list[Cable]) -> list[tuple[str, str, list[Rank], str | None]]:
    sf = ctx.inv.sparkfab
    owner: dict[str, str] = {}
    out = []
    for name, inst in sf.instances.items():
        path = SF + ("instances", name)
        if inst.tp != len(inst.hosts):
            ctx.add(
                path + ("tp",),
                f"tp {inst.tp} but the instance has {len(inst.hosts)} Sparks",
                "tensor parallelism runs one rank per Spark: tp must equal the number of hosts",
            )
        hosts = _instance_hosts(ctx, name, inst.hosts, owner)
        if hosts is None:
            continue
        _check_launcher(ctx, name, inst.launcher)
        resolved = _topology(ctx, name, hosts, cables)
        if resolved is not None:
            _check_gloo(ctx, name, inst.launcher, resolved[0], len(hosts))
            out.append((name, *resolved))
    return out


def _check_gloo(ctx: Ctx, name: str, launcher: str | None, topology: str, n: int) -> None:
    """A Gloo engine needs every rank reachable on one subnet: a ring of three or more has none
    unless its control plane is routed over the fabric."""
    rec = _recipes(ctx).get(launcher or "")
    if rec is None or rec.tp_backend != "gloo" or topology not in ("triangle", "ring"):
        return
    if ctx.inv.sparkfab.control_plane != "fabric":
        ctx.add(
            SF + ("instances", name, "launcher"),
            f"launcher '{launcher}' sends its all-reduces over Gloo TCP, which connects every rank to every "
            f"other; a switchless {topology} of {n} Sparks has no subnet they all share",
            "set control_plane: fabric (routes over the ring), or use a pair or a switch",
        )


#: vLLM flags sparkfab writes itself, and where their values come from.
GENERATED_FLAGS = {
    "tensor-parallel-size": "the instance's tp",
    "distributed-executor-backend": "the instance's backend",
    "nnodes": "the instance's hosts",
    "node-rank": "the cable order",
    "master-addr": "the head's control address",
    "master-port": "master_port",
    "headless": "every rank but 0",
    "host": "0.0.0.0 on every rank",
    "port": "the instance's port",
}


def _recipes(ctx: Ctx) -> dict[str, Recipe]:
    """The recipes the inventory can name; a broken recipe file is a problem of the instance."""
    try:
        return ctx.recipes()
    except RenderError:
        return {}


def _check_launcher(ctx: Ctx, name: str, launcher: str | None) -> None:
    if launcher is None:
        return
    try:
        known = ctx.recipes()
    except RenderError as exc:
        ctx.add(SF + ("instances", name, "launcher"), f"recipe {exc}", "fix the recipe file")
        return
    if launcher not in known:
        dirs = " and ".join(f"{d}/*.yml" for d in (ctx.recipe_dirs or ()))
        ctx.add(
            SF + ("instances", name, "launcher"),
            f"unknown launcher '{launcher}'",
            _close(launcher, sorted(known))
            + f" (recipes live in {dirs or 'launchers/*.yml'}; your own go in launchers/ beside the inventory)",
        )
        return
    if known[launcher].engine == "vllm":
        _check_flags(ctx, name)


def _check_flags(ctx: Ctx, name: str) -> None:
    """Every flag is one `vllm serve` knows, and none is one sparkfab generates per rank."""
    from sparkfab.launchers import vllm_flags

    known = vllm_flags()
    for flag in ctx.inv.sparkfab.instances[name].flags:
        path = SF + ("instances", name, "flags", flag)
        if flag in GENERATED_FLAGS:
            ctx.add(
                path,
                f"--{flag} is generated by sparkfab (from {GENERATED_FLAGS[flag]}); a second one would differ per rank",
                "remove it and set what it comes from instead",
            )
        elif f"--{flag}" not in known:
            close = difflib.get_close_matches(f"--{flag}", sorted(known), n=1, cutoff=0.75)
            hint = f"did you mean '{close[0][2:]}'?" if close else "see `vllm serve --help`"
            ctx.add(path, f"--{flag} is not a flag of vllm serve {vllm_version()}", hint)


def _instance_hosts(ctx: Ctx, name: str, hosts: list[str], owner: dict[str, str]) -> list[str] | None:
    path = SF + ("instances", name, "hosts")
    ok = True
    for j, h in enumerate(hosts):
        if h not in ctx.inv.hosts:
            ctx.add(path + (j,), f"unknown host '{h}'", _close(h, sorted(ctx.inv.hosts)))
            ok = False
        elif h in owner:
            ctx.add(path + (j,), f"{h} is already in instance '{owner[h]}'", "instances cannot share a Spark")
            ok = False
        else:
            owner[h] = name
    if len(set(hosts)) != len(hosts):
        ctx.add(path, "lists a host twice", "")
        ok = False
    return hosts if ok else None


def _topology(ctx: Ctx, name: str, hosts: list[str], cables: list[Cable]) -> tuple[str, list[Rank], str | None] | None:
    inst = ctx.inv.sparkfab.instances[name]
    path = SF + ("instances", name)
    head = _head(ctx, name, hosts)
    given = _given_ranks(ctx, name, hosts)
    if given is None:
        return None
    if len(hosts) == 1:
        return "single", [Rank(0, hosts[0], None, None, None, None)], None
    switches = _common_switch(hosts, cables)
    if switches:
        return "switched", order_switched(hosts, head, given), switches
    if any(c.switched and c.spark_end().node in hosts for c in cables):
        ctx.add(
            path + ("hosts",),
            "Sparks of one instance sit on different fabrics (some on a switch, some not)",
            "cable every Sparks of an instance to one switch, or none of them",
        )
        return None
    links = [c for c in cables if not c.switched and c.a.node in hosts and c.b.node in hosts]
    try:
        topo, ranks = order_ring(hosts, head, links, given, inst.tp)
    except RingError as exc:
        ctx.add(path + ("hosts",), exc.message, exc.hint)
        return None
    return topo, ranks, None


def _given_ranks(ctx: Ctx, name: str, hosts: list[str]) -> dict[str, int | None] | None:
    """Ranks written on hosts: each at most once and below the instance's size."""
    given: dict[str, int | None] = {h: r for h in hosts if (r := ctx.inv.hosts[h].rank) is not None}
    ok = True
    for h, r in given.items():
        others = [o for o, q in given.items() if q == r and o != h]
        if others:
            ctx.add(
                ("all", "hosts", h, "rank"),
                f"rank {r} is also given to {', '.join(others)} (instance '{name}')",
                "each rank belongs to one Spark",
            )
            ok = False
        elif r is not None and r >= len(hosts):
            ctx.add(
                ("all", "hosts", h, "rank"),
                f"rank {r} is beyond instance '{name}' of {len(hosts)} Sparks",
                f"ranks run from 0 to {len(hosts) - 1}",
            )
            ok = False
    return given if ok else None


def _head(ctx: Ctx, name: str, hosts: list[str]) -> str:
    inst = ctx.inv.sparkfab.instances[name]
    zero = [h for h in hosts if ctx.inv.hosts[h].rank == 0]
    if inst.head is not None and inst.head not in hosts:
        ctx.add(
            SF + ("instances", name, "head"),
            f"head '{inst.head}' is not one of the instance's hosts",
            _close(inst.head, hosts),
        )
        return zero[0] if zero else hosts[0]
    return inst.head or (zero[0] if zero else hosts[0])


def _common_switch(hosts: list[str], cables: list[Cable]) -> str | None:
    per_host: dict[str, set[str]] = {h: set() for h in hosts}
    for c in cables:
        if c.switched and c.spark_end().node in per_host:
            sw = c.a.node if c.a.switch else c.b.node
            per_host[c.spark_end().node].add(sw)
    common = set.intersection(*per_host.values()) if per_host else set()
    return sorted(common)[0] if common else None


# ------------------------------------------------------------------------------ hosts


def _hosts(
    ctx: Ctx,
    cables: list[Cable],
    subnets: dict[RailKey, ipaddress.IPv4Network],
    instances: list[tuple[str, str, list[Rank], str | None]],
) -> dict[str, Host]:
    ifaces = _ifaces(ctx, cables, subnets)
    where = {r.host: (name, topo, r) for name, topo, ranks, _ in instances for r in ranks}
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


def _hca(ifaces: tuple[Iface, ...]) -> dict[str, tuple[str, ...]]:
    devices = sorted({i.rdma for i in ifaces}, key=spark.pci_sort_key)
    return {
        "200": tuple(devices),
        "100e": tuple(d for d in devices if spark.pci_sort_key(d)[0] == 0),
        "100": tuple(devices),
    }


def _fabric_control(
    ctx: Ctx, hosts: dict[str, Host], instances: list[tuple[str, str, list[Rank], str | None]]
) -> dict[str, Host]:
    from dataclasses import replace

    for name, h in hosts.items():
        if not h.ifaces:
            continue
        rank = next((r for _, _, ranks, _ in instances for r in ranks if r.host == name), None)
        port = rank.next_port if rank and rank.next_port else h.ifaces[0].port
        ctl = next(i for i in h.ifaces if i.port == port and i.root == 0)
        hosts[name] = replace(h, control_if=ctl.netdev, control_address=ctl.ip)
    for _, topo, ranks, _ in instances:
        if topo in ("pair", "triangle", "ring"):
            for host, routes in ring_routes(hosts, ranks).items():
                hosts[host] = replace(hosts[host], routes=routes, forwarding=len(ranks) >= 4)
    for name, h in hosts.items():
        if h.instance is None and not h.ifaces:
            ctx.add(
                ("all", "hosts", name),
                "control_plane is 'fabric' but this Spark has no fabric cable",
                "cable it, or use control_plane: management",
            )
    return hosts


# --------------------------------------------------------------------------- assemble


def _assemble(
    ctx: Ctx,
    cables: list[Cable],
    subnets: dict[RailKey, ipaddress.IPv4Network],
    hosts: dict[str, Host],
    instances: list[tuple[str, str, list[Rank], str | None]],
) -> Plan:
    inv = ctx.inv
    sf = inv.sparkfab
    rails = []
    for key, net in subnets.items():
        members = tuple(sorted((h.name, i.netdev) for h in hosts.values() for i in h.ifaces if i.rail == key.name))
        rails.append(Rail(key.name, str(net), key.root, key.cable, key.switch, members))
    rails.sort(key=lambda r: ipaddress.IPv4Network(r.subnet))
    insts = []
    for name, topo, ranks, sw in instances:
        spec = sf.instances[name]
        insts.append(
            Instance(
                name=name,
                topology=topo,
                tp=spec.tp,
                ranks=tuple(ranks),
                launcher=spec.launcher,
                recipe=ctx.recipes()[spec.launcher] if spec.launcher else None,
                backend=spec.backend,
                runtime=spec.runtime,
                port=spec.port,
                flags=dict(spec.flags),
                env=dict(spec.env),
                master_addr=hosts[ranks[0].host].control_address,
                switch=sw,
                model=spec.model,
                secrets=tuple(spec.secrets),
                hf_cache=spec.hf_cache,
            )
        )
    switches = tuple(
        Switch(
            n,
            switch_model(inv, n).name,
            {m: switch_model(inv, n).capacity(catalog.LANE_GBPS[m]) for m in ("200", "100")},
            sum(1 for c in cables if c.switched and n in (c.a.node, c.b.node)),
        )
        for n in sf.switches
    )
    return Plan(
        cluster=sf.cluster,
        link_speed=sf.link_speed,
        mtu=sf.mtu,
        rail_prefix=sf.rail_prefix,
        control_plane=sf.control_plane,
        nccl_version=sf.nccl_version,
        nccl_graph=sf.nccl_graph if sf.nccl_graph is not None else any(t == "ring" for _, t, _, _ in instances),
        nccl_channels=sf.nccl_channels,
        master_port=sf.master_port,
        hosts=tuple(hosts.values()),
        instances=tuple(insts),
        rails=tuple(rails),
        switches=switches,
        group_vars=dict(inv.group_vars),
        netplan_renderer=sf.netplan_renderer,
        source=inv.source,
    )


def load_plan(path: str, link_speed: str | None = None) -> Plan:
    """Load, validate and resolve an inventory file in one step (`link_speed` replaces the
    file's and is validated like it)."""
    from sparkfab.inventory import parse_partial, read
    from sparkfab.launchers import search_path

    raw, source = read(path)
    inv, problems = parse_partial(raw, source)
    if inv is None:
        raise InventoryError(problems, source)
    if link_speed is not None:
        inv = inv.model_copy(update={"sparkfab": inv.sparkfab.model_copy(update={"link_speed": link_speed})})
    return resolve(inv, raw, problems, search_path(path))
