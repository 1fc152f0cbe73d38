"""Stage 1: the cable ends, checked against the hosts, switches and their breakouts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparkfab import spark
from sparkfab.inventory import Inventory, split_end, walk
from sparkfab.resolve.context import SF, Ctx, close
from sparkfab.switches import catalog, profiles

_SW_PORT = re.compile(r"^([0-9]+)(?:/([0-9]+))?\Z")


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


#: Entries of a rendered tree beside the host directories: a host must not be named like one.
#: The groups playbooks/serve.yml puts hosts into as it goes: those refused (a rank of their
#: instance did not answer), those that stop, start in the first or the second wave, wait for
#: health (the rendered inventory declares them, empty).
SERVE_GROUPS = (
    "sparkfab_serve_refused",
    "sparkfab_serve_stop",
    "sparkfab_serve_first",
    "sparkfab_serve_second",
    "sparkfab_serve_health",
)
RESERVED_NAMES = ("inventory.yml", "host_vars", "bundles", "all", "ungrouped", "localhost", *SERVE_GROUPS)


def check_names_and_ports(ctx: Ctx) -> None:
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
    check_identities(ctx)
    engine = {sf.master_port: "master_port", sf.master_port + 1: "master_port + 1 (verify --collective)"}
    for name, inst in sf.instances.items():
        if inst.port in engine:
            ctx.add(
                SF + ("instances", name, "port"),
                f"API port {inst.port} is taken by {engine[inst.port]}",
                "choose another port, e.g. 8000",
            )
    if sf.exporter is not None:
        taken = {**engine, **{inst.port: f"instance {name}'s API" for name, inst in sf.instances.items()}}
        if sf.exporter.port in taken:
            ctx.add(
                SF + ("exporter", "port"),
                f"the exporter's port {sf.exporter.port} is taken by {taken[sf.exporter.port]}",
                "choose another port, e.g. 9465",
            )


def check_identities(ctx: Ctx) -> None:
    """Names that would stand for two things: two Sparks whose names a resolver takes as one (DNS
    names ignore case), two Sparks reached at one address and port (the push would configure one
    machine twice), two switches announcing one LLDP identity, or one that is a Spark's name (a
    Spark in the right port of the wrong switch would pass verify)."""
    seen: dict[str, str] = {}
    for name in ctx.inv.hosts:
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            ctx.add(("all", "hosts", name), f"hosts '{other}' and '{name}' differ only by case", "name each Spark once")
    at: dict[tuple[str, str], str] = {}
    for name, hv in ctx.inv.hosts.items():
        if hv.ansible_host is None:
            continue
        where = (
            hv.ansible_host.casefold(),
            str(hv.ansible.get("ansible_port", hv.ansible.get("ansible_ssh_port", 22))),
        )
        other = at.setdefault(where, name)
        if other != name:
            ctx.add(
                ("all", "hosts", name, "ansible_host"),
                f"{name} and {other} are both reached at {hv.ansible_host} port {where[1]}: one machine, pushed twice",
                "give each Spark its own management address (or its own ansible_port behind a jump host)",
            )
    sf = ctx.inv.sparkfab
    names: dict[str, str] = {}
    for name, sw in sf.switches.items():
        identity = sw.lldp_name or name
        if identity in ctx.inv.hosts:
            ctx.add(
                SF + ("switches", name, "lldp_name"),
                f"switch {name} announces itself as '{identity}', a Spark's name",
                "set the switch's identity to a name of its own",
            )
        other = names.setdefault(identity.casefold(), name)
        if other != name:
            ctx.add(
                SF + ("switches", name),
                f"switches {other} and {name} both announce themselves as '{identity}' over LLDP: a Spark in the "
                "right port of the wrong switch would pass verify",
                f"give each switch its own identity (RouterOS: `/system identity set name={name}`) and drop or "
                "change `lldp_name`",
            )


# ----------------------------------------------------------------------------- cables


def parse_cables(ctx: Ctx) -> list[Cable]:
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
    ctx.add(path, f"{text} — '{node}' is neither a host nor a switch of this inventory", close(node, known))
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


def switch_profile(inv: Inventory, name: str) -> profiles.Profile:
    """How the switch names itself and its ports: the inventory's `os`, else its model's."""
    sw = inv.sparkfab.switches[name]
    return profiles.profile(sw.os or profiles.MODEL_OS[sw.model])


def switch_port_id(inv: Inventory, name: str, port: int, lane: int) -> str:
    """The port id switch `name` announces for breakout lane `lane` of front port `port`."""
    model = switch_model(inv, name)
    legs = model.lanes(port, catalog.LANE_GBPS[inv.sparkfab.link_speed])
    return switch_profile(inv, name).port_id(model, port, lane, legs)


def check_switches(ctx: Ctx, cables: list[Cable]) -> None:
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
