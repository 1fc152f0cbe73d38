"""Validate an inventory's meaning and resolve it into a Plan, collecting every problem.

Order of work: parse cable ends -> allocate subnets -> check switches -> resolve each
instance's topology and ranks -> addresses, peers, HCA lists, control plane.
Allocation is stable: rails are numbered in file order of first use (explicit subnets are
reserved first), and a Spark's host part on a switch comes from its switch port and lane,
so appending a cable or a Spark never renumbers what exists.

The stages, one module each, run in this order and share a `context.Ctx`:

- `cables`: cable ends against hosts, switches and breakouts;
- `rails`: a subnet per rail;
- `instances` (with `ranks`): each instance's topology and ranks in cable order;
- `hosts`: interfaces, addresses, peers, HCA lists, control plane;

then `assemble` builds the Plan.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from sparkfab.engines.recipes import search_path
from sparkfab.errors import InventoryError, Problem
from sparkfab.inventory import Inventory, parse_partial
from sparkfab.inventory.ansible import placed
from sparkfab.inventory.read import read
from sparkfab.plan import Exporter, Host, Instance, PerfTools, Plan, Rail, Switch
from sparkfab.resolve.cables import (
    Cable,
    check_names_and_ports,
    check_switches,
    parse_cables,
    switch_model,
    switch_profile,
)
from sparkfab.resolve.context import SF, Ctx
from sparkfab.resolve.hosts import resolve_hosts
from sparkfab.resolve.instances import ResolvedInstance, instances
from sparkfab.resolve.rails import RailKey, allocate
from sparkfab.spark import LinkSpeed
from sparkfab.switches import catalog


def resolve(
    inv: Inventory, raw: Any = None, earlier: list[Problem] | None = None, recipe_dirs: tuple[Path, ...] | None = None
) -> Plan:
    ctx = Ctx(inv, raw, list(earlier or []), recipe_dirs)
    check_names_and_ports(ctx)
    cables = parse_cables(ctx)
    subnets = allocate(ctx, cables)
    check_switches(ctx, cables)
    resolved = instances(ctx, cables)
    if ctx.problems:
        raise InventoryError(ctx.problems, inv.source)
    ctx.inv = without_bystanders(ctx.inv)  # after the names are checked: a typo's hint lists them all
    hosts = resolve_hosts(ctx, cables, subnets, resolved)
    check_ray(ctx, hosts, resolved)
    if ctx.problems:
        raise InventoryError(ctx.problems, inv.source)
    return assemble(ctx, cables, subnets, hosts, resolved)


def without_bystanders(inv: Inventory) -> Inventory:
    """A host of the cluster's group with no cable and in no instance (a monitoring box where the
    block sits in group `all`) is not a Spark: it is left out, as a host outside the group is
    (validate and plan name it), and nothing is rendered or pushed to it. An inventory without
    any cable or instance yet (the Sparks discover is to read) keeps every host."""
    sf = inv.sparkfab
    used = {str(end).split(":", 1)[0] for c in sf.cables for end in c.ends}
    used |= {h for spec in sf.instances.values() for h in spec.hosts}
    if not used:
        return inv
    idle = [h for h in inv.hosts if h not in used]
    if not idle:
        return inv
    hosts = {h: v for h, v in inv.hosts.items() if h in used}
    return inv.model_copy(update={"hosts": hosts, "left_out": [*inv.left_out, *idle]})


def check_ray(ctx: Ctx, hosts: dict[str, Host], resolved: list[ResolvedInstance]) -> None:
    """Ray's backend copies rank 0's NCCL_* variables to every worker (vLLM's ray_env copies the
    NCCL_ prefix), so it needs ranks whose NCCL settings are the same: the socket interface
    (the control netdev) and the HCA list of every mode. A switchless topology gives each host
    its own; refused there, with the values that would be copied."""
    sf = ctx.inv.sparkfab
    for ri in resolved:
        spec = sf.instances[ri.name]
        recipe = ctx.recipes()[spec.launcher] if spec.launcher else None
        if (spec.backend or (recipe.backend if recipe else None)) != "ray":
            continue
        ranks = [hosts[r.host] for r in ri.ranks]
        differ = []
        if len({h.control_if for h in ranks}) > 1:
            differ.append("NCCL_SOCKET_IFNAME (" + ", ".join(f"{h.name}: {h.control_if}" for h in ranks) + ")")
        hcas = {h.name: ",".join(h.hca[sf.link_speed]) for h in ranks}
        if len(set(hcas.values())) > 1:
            differ.append("NCCL_IB_HCA (" + ", ".join(f"{n}: {v}" for n, v in hcas.items()) + ")")
        if differ:
            where = ("instances", ri.name, "backend") if spec.backend else ("instances", ri.name, "launcher")
            switched = all(i.switch for h in ranks for i in h.ifaces)
            fix = (
                "cable the same port of every Spark to the switch (p1 on each: one HCA list for all), or use "
                "backend: mp (vLLM's own multi-node start, each rank with its own env file)"
                if switched
                else "use backend: mp (vLLM's own multi-node start, each rank with its own env file), or put the "
                "Sparks on a switch, each by the same port"
            )
            ctx.add(
                SF + where,
                f"backend ray copies rank 0's NCCL_* variables to every Ray worker, and the ranks of {ri.name} "
                f"need their own: {'; '.join(differ)}",
                fix,
            )


# ----------------------------------------------------------------------------- names


def assemble(
    ctx: Ctx,
    cables: list[Cable],
    subnets: dict[RailKey, ipaddress.IPv4Network],
    hosts: dict[str, Host],
    instances: list[ResolvedInstance],
) -> Plan:
    inv = ctx.inv
    sf = inv.sparkfab
    rails = []
    for key, net in subnets.items():
        members = tuple(sorted((h.name, i.netdev) for h in hosts.values() for i in h.ifaces if i.rail == key.name))
        rails.append(Rail(key.name, str(net), key.root, key.cable, key.switch, members))
    rails.sort(key=lambda r: ipaddress.IPv4Network(r.subnet))
    insts = []
    for ri in instances:
        spec = sf.instances[ri.name]
        recipe = ctx.recipes()[spec.launcher] if spec.launcher else None
        insts.append(
            Instance(
                name=ri.name,
                topology=ri.topology,
                tp=spec.tp,
                ranks=tuple(ri.ranks),
                launcher=spec.launcher,
                recipe=recipe,
                # one resolved backend and runtime, read by the launch, the firewall and the plays
                backend=spec.backend or (recipe.backend if recipe else None),
                runtime=spec.runtime or (recipe.default_runtime if recipe else None),
                port=spec.port,
                flags=dict(spec.flags),
                env=dict(spec.env),
                master_addr=hosts[ri.ranks[0].host].control_address,
                switch=ri.switch,
                model=spec.model,
                secrets=tuple(spec.secrets),
                hf_cache=spec.hf_cache,
                tp_unchecked=ctx.tp_unchecked.get(ri.name, ""),
                memory=ctx.memory.get(ri.name, ()),
            )
        )
    switches = tuple(
        Switch(
            n,
            switch_model(inv, n).name,
            {m: switch_model(inv, n).capacity(catalog.LANE_GBPS[m]) for m in catalog.LANE_MODES},
            sum(1 for c in cables if c.switched and n in (c.a.node, c.b.node)),
            switch_profile(inv, n).os,
            sf.switches[n].lldp_name or n,
            switch_model(inv, n).port_count,
            sf.switches[n].speed or 400 if sf.switches[n].model == "generic" else 0,
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
        nccl_graph=sf.nccl_graph if sf.nccl_graph is not None else any(i.topology == "ring" for i in instances),
        nccl_channels=sf.nccl_channels,
        master_port=sf.master_port,
        hosts=tuple(hosts.values()),
        instances=tuple(insts),
        rails=tuple(rails),
        switches=switches,
        group_vars=dict(inv.group_vars),
        netplan_renderer=sf.netplan_renderer,
        source=inv.source,
        groups={g: tuple(names) for g, names in inv.groups.items()},
        left_out=tuple(inv.left_out),
        exporter=(
            Exporter(sf.exporter.port, sf.exporter.interval_ms / 1000, sf.exporter.peak_window_s)
            if sf.exporter is not None
            else None
        ),
        perf_tools=PerfTools(sf.perf_tools.nccl_tests, sf.perf_tools.nccl, sf.perf_tools.busbw_min_gbps),
    )


def load_plan(path: str, link_speed: LinkSpeed | None = None) -> Plan:
    """Load, validate and resolve an inventory file in one step (`link_speed` replaces the
    file's and is validated like it)."""
    raw, source = read(path)
    origins = getattr(raw, "origins", None)  # where the Ansible reader found each host variable
    try:
        inv, problems = parse_partial(raw, source)
        if inv is None:
            raise InventoryError(problems, source)
        if link_speed is not None:
            inv = inv.model_copy(update={"sparkfab": inv.sparkfab.model_copy(update={"link_speed": link_speed})})
        return resolve(inv, raw, problems, search_path(path))
    except InventoryError as exc:
        if not origins:
            raise
        raise InventoryError(placed(exc.problems, origins), exc.source) from None
