"""The lab as data: what `lab up` will create for a plan (pure; `lab up --dry-run` prints it).

Every object carries the lab's prefix so `lab down` finds it again, also after a crash:
namespaces `sf-<cluster>-<host>` (switches `sf-<cluster>-sw.<name>`, the cables'
`sf-<cluster>-@wires`), root-namespace links `sf-<id>-...` (id: 6 hex digits of the cluster
name, since link names stop at 15 characters), `/etc/netns/<namespace>/` and the lab directory.

A cable is one wire, as on the hardware: both PCIe twins of a Spark's port and the far end (the
far Spark's twins, or the switch's port for that breakout lane) are ports of one bridge, the
cable's, in the wires namespace. So each twin hears its own twin and both far twins over LLDP,
and an ARP broadcast reaches every netdev on the cable. The cable's bridge forwards LLDP (a
switch does not: its bridge keeps the Sparks apart at LLDP, as a switch's ports do).
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from sparkfab import spark
from sparkfab.lab import rates
from sparkfab.lldp import frame as lldp_frame
from sparkfab.paths import LabPaths, lab_dir
from sparkfab.plan import Host, Iface, Plan
from sparkfab.switches import catalog, profiles

#: the management interface of a lab host that is not a Spark
OTHER_MGMT_IF = "eth0"
#: RFC 2544 benchmarking range: never routed on real networks.
MGMT_BASE = ipaddress.IPv4Network("198.18.0.0/15")


def lab_id(cluster: str) -> str:
    return hashlib.sha1(cluster.encode()).hexdigest()[:6]


def ns_prefix(cluster: str) -> str:
    return f"sf-{cluster}-"


def root_prefix(cluster: str) -> str:
    return f"sf-{lab_id(cluster)}-"


def shipped_hostname(cluster: str, key: str) -> str:
    """The name a lab Spark boots with: as DGX OS names a Spark (`spark-` and four hex digits, as
    the seed's `spark-329f`), not the inventory's key, which is the operator's label (an LLDP
    neighbour's system name is its hostname: verify and discover must know a Spark by what it
    says of itself). Stable for a cluster and key, and never equal to the key."""
    digest = hashlib.sha1(f"{cluster}/{key}".encode()).hexdigest()
    name = f"spark-{digest[:4]}"
    return name if name != key else f"spark-{digest[4:8]}"


def mgmt_net(cluster: str) -> ipaddress.IPv4Network:
    index = int(lab_id(cluster), 16) % 512
    return list(MGMT_BASE.subnets(new_prefix=24))[index]


@dataclass(frozen=True)
class Node:
    name: str
    ns: str
    kind: str  # spark | switch | host (a machine of the inventory that is not in the cluster)
    mgmt_if: str = ""
    mgmt_ip: str = ""
    root_peer: str = ""
    lldp_ifs: str = ""
    system: str = ""  # a switch's LLDP system name (its OS's identity, `lldp_name`)
    hostname: str = ""  # a Spark's name as shipped (`shipped_hostname`), never its inventory key
    #: a switch's LLDPDUs, "<port> <hex>" per port, as its OS sends them (`switch_frames`)
    frames: tuple[str, ...] = ()
    interval_s: int = 0  # how often a switch announces, as its OS does as shipped


@dataclass(frozen=True)
class Veth:
    """One netdev on a cable: a veth pair from the netdev (a Spark's twin, with its real name, or
    a switch's port, named as its OS names it) to a port of the cable's bridge in the wires
    namespace."""

    a_ns: str
    a_if: str
    b_ns: str
    b_if: str
    mtu: int
    label: str  # what messages call it: `cables[N] root R`, and what a drill did to it
    bridge: str | None = None  # the cable's bridge (in b_ns) the b end is a port of
    cable: int = -1  # the cable it stands for (its index in the inventory) ...
    root: int = 0  # ... and the PCIe root of its rail
    rate_mbit: int = 0  # the token-bucket rate it is shaped to (0: not shaped)
    cut: bool = False  # pulled at the far end (a drill): the Spark's end has no carrier
    kind: str = "twin"  # twin: a Spark's netdev; switch: a switch's port (a_bridge: the switch's own)
    end: int = 0  # which end of the cable (its place in the inventory's `cables` entry) it is at
    a_bridge: str | None = None  # a switch port's bridge in the switch's namespace


@dataclass(frozen=True)
class LabSpec:
    cluster: str
    id: str
    dir: Path
    mgmt_net: str
    bridge: str
    root_ip: str
    nodes: tuple[Node, ...]
    veths: tuple[Veth, ...]
    switch_bridges: tuple[tuple[str, str, int], ...] = field(default_factory=tuple)  # ns, bridge, mtu
    #: how its Sparks arrive: with lldpd as packaged, or "bare" (`lab.image.SHIPPED`)
    shipped: str = "lldpd"
    #: a real link speed is this many times its cables' shaped rate (`rates.scale_for`)
    scale: int = rates.SCALE

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    @property
    def paths(self) -> LabPaths:
        """What the lab's directory holds, each in one place."""
        return LabPaths(self.dir)

    @property
    def sparks(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind == "spark")

    @property
    def machines(self) -> tuple[Node, ...]:
        """Every booted machine: the Sparks, and the inventory's hosts outside the cluster."""
        return tuple(n for n in self.nodes if n.kind in ("spark", "host"))

    def describe(self) -> list[str]:
        lines = [
            f"lab {self.cluster} (id {self.id}) in {self.dir}",
            f"root namespace: bridge {self.bridge} {self.root_ip}/24 (management {self.mgmt_net})",
        ]
        for n in self.nodes:
            what = (
                f"{n.mgmt_if} {n.mgmt_ip} <-> {n.root_peer}, a booted machine: systemd, sshd, systemd-networkd, "
                "lldpd, nftables, Docker"
                if n.kind == "spark"
                else f"{n.mgmt_if} {n.mgmt_ip}, a booted machine outside the cluster (sparkfab leaves it alone)"
                if n.kind == "host"
                else "one bridge per cable, forwarding LLDP"
                if n.kind == "wires"
                else f"lldpd announcing {n.system} on {n.lldp_ifs}"
            )
            lines.append(f"namespace {n.ns} ({n.kind} {n.name}): {what}")
        for ns, br, mtu in self.switch_bridges:
            lines.append(f"bridge {br} in {ns}, MTU {mtu}")
        for v in self.veths:
            to = f"{v.b_ns}:{v.b_if}" + (f" (port of {v.bridge}, MTU {v.mtu})" if v.bridge else "")
            lines.append(f"veth {v.a_ns}:{v.a_if} <-> {to}  [{v.label}]")
        return lines


#: the bridge of a switch: its ports switch between every Spark, and forward no LLDP
SWITCH_BRIDGE = "br0"


#: the node of the cables' bridges (no host is named with an `@`)
WIRES = "@wires"


def wires_ns(cluster: str) -> str:
    """The namespace of the cables' bridges."""
    return ns_prefix(cluster) + WIRES


def cable_bridge(cable: int) -> str:
    return f"c{cable}"


def _twin(plan: Plan, ns_of: dict[str, str], wires: str, h: Host, i: Iface, index: int, end: int) -> Veth:
    return Veth(
        ns_of[h.name],
        i.netdev,
        wires,
        f"h{index}{i.port}r{i.root}",
        plan.mtu,
        f"cables[{i.cable}] root {i.root}",
        cable_bridge(i.cable),
        cable=i.cable,
        root=i.root,
        end=end,
    )


def spec(plan: Plan) -> LabSpec:
    c = plan.cluster
    net = mgmt_net(c)
    hosts = list(net.hosts())
    rp = root_prefix(c)
    nodes = [
        Node(
            h.name,
            ns_prefix(c) + h.name,
            "spark",
            h.mgmt_if,
            str(hosts[i]),
            f"{rp}m{i}",
            ",".join(spark.NETDEVS),
            hostname=shipped_hostname(c, h.name),
        )
        for i, h in enumerate(plan.hosts)
    ]
    # the inventory's other hosts (a monitoring box): booted too, so that a touch would show
    first = len(plan.hosts)
    nodes += [
        Node(name, ns_prefix(c) + name, "host", OTHER_MGMT_IF, str(hosts[first + i]), f"{rp}m{first + i}")
        for i, name in enumerate(plan.left_out)
    ]
    wires = wires_ns(c)
    used = sorted({i.switch for h in plan.hosts for i in h.ifaces if i.switch})
    ns_of = {n.name: n.ns for n in nodes} | _switch_ns(c, used)
    order = {h.name: k for k, h in enumerate(plan.hosts)}
    ports: dict[str, set[str]] = {s: set() for s in used}
    veths: list[Veth] = []
    switch_ports: dict[int, Veth] = {}
    for index, h in enumerate(plan.hosts):
        for i in h.ifaces:
            # a direct cable's far end (what a swap moves) is its Spark listed later
            end = 1 if i.peer_host and order[i.peer_host] < index else 0
            veths.append(_twin(plan, ns_of, wires, h, i, index, end))
            if i.switch and i.cable not in switch_ports and i.switch_port_id:
                ports[i.switch].add(i.switch_port_id)
                switch_ports[i.cable] = Veth(
                    ns_of[i.switch],
                    i.switch_port_id,
                    wires,
                    f"c{i.cable}sw",
                    plan.mtu,
                    f"cables[{i.cable}] at {i.switch}:{i.switch_port}",
                    cable_bridge(i.cable),
                    cable=i.cable,
                    kind="switch",
                    end=1,
                    a_bridge=SWITCH_BRIDGE,
                )
    veths += [switch_ports[k] for k in sorted(switch_ports)]
    nodes += [
        Node(
            s,
            ns_of[s],
            "switch",
            lldp_ifs=",".join(sorted(ports[s])),
            system=plan.switch(s).lldp_name,
            frames=switch_frames(plan, s),
            interval_s=profiles.profile(_os(plan, s)).wire.interval_s,
        )
        for s in used
    ]
    nodes.append(Node(WIRES, wires, "wires"))
    bridges = tuple((ns_of[s], SWITCH_BRIDGE, plan.mtu) for s in used)
    bridges += tuple((wires, cable_bridge(k), plan.mtu) for k in sorted({v.cable for v in veths}))
    return LabSpec(
        c,
        lab_id(c),
        lab_dir(c),
        str(net),
        f"{rp}br",
        str(hosts[-1]),
        tuple(nodes),
        tuple(veths),
        bridges,
        scale=rates.scale_for(plan),
    )


#: the bridge the lab's RouterOS switches put their Spark ports in: one a site would name (the
#: published Spark configurations use `bridge` and `bridge-fabric`), not RouterOS's default
ROUTEROS_BRIDGE = "bridge-fabric"


def _os(plan: Plan, name: str) -> profiles.SwitchOS:
    return cast(profiles.SwitchOS, plan.switch(name).os)


def switch_frames(plan: Plan, name: str) -> tuple[str, ...]:
    """The LLDPDU switch `name` sends on each port a cable uses, "<port> <hex>", as its OS sends
    it (`profiles.Profile.frame`): its identity the inventory's `lldp_name` (else its key), its
    chassis a MAC of the lab's, a RouterOS port in the lab's bridge."""
    sw = plan.switch(name)
    model = catalog.MODELS.get(sw.model) or catalog.generic(sw.ports, sw.port_gbps)
    profile = profiles.profile(_os(plan, name))
    lane = spark.SPEEDS[plan.link_speed].lane_gbps
    digest = hashlib.sha1(f"{plan.cluster}/{name}".encode()).hexdigest()
    at = profiles.Announcer(
        sw.lldp_name or name,
        "02:" + ":".join(digest[i : i + 2] for i in range(0, 10, 2)),
        ROUTEROS_BRIDGE if profile.os == "routeros" else None,
    )
    out: dict[str, str] = {}
    for h in plan.hosts:
        for i in h.ifaces:
            if i.switch != name or not i.switch_port or not i.switch_port_id:
                continue
            port, leg = (int(x) for x in i.switch_port.split("/"))
            du = lldp_frame.lldpdu(profile.frame(model, port, leg, model.lanes(port, lane), at))
            out[i.switch_port_id] = du.hex()
    return tuple(f"{port} {du}" for port, du in sorted(out.items()))


def _switch_ns(cluster: str, names: list[str]) -> dict[str, str]:
    return {s: ns_prefix(cluster) + "sw." + s for s in names}
