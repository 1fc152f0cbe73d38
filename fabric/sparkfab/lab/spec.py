"""The lab as data: what `lab up` will create for a plan (pure; `lab up --dry-run` prints it).

Every object carries the lab's prefix so `lab down` finds it again, also after a crash:
namespaces `sf-<cluster>-<host>` (switches `sf-<cluster>-sw.<name>`), root-namespace links
`sf-<id>-...` (id: 6 hex digits of the cluster name, since link names stop at 15 characters),
`/etc/netns/<namespace>/` and the lab directory.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from sparkfab import spark
from sparkfab.paths import lab_dir
from sparkfab.plan import Plan

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


@dataclass(frozen=True)
class Veth:
    """One rail of one cable: a veth pair with the real netdev names at both ends."""

    a_ns: str
    a_if: str
    b_ns: str
    b_if: str
    mtu: int
    label: str  # what messages call it: `cables[N] root R`, and what a drill did to it
    bridge: str | None = None  # b end is a switch port, enslaved to this bridge
    cable: int = -1  # the cable it stands for (its index in the inventory) ...
    root: int = 0  # ... and the PCIe root of its rail
    rate_mbit: int = 0  # the token-bucket rate it is shaped to (0: not shaped)
    cut: bool = False  # pulled at the far end (a drill): the Spark's end has no carrier


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

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

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
                else "lldpd"
            )
            lines.append(f"namespace {n.ns} ({n.kind} {n.name}): {what}")
        for ns, br, mtu in self.switch_bridges:
            lines.append(f"bridge {br} in {ns}, MTU {mtu}")
        for v in self.veths:
            to = f"{v.b_ns}:{v.b_if}" + (f" (port of {v.bridge}, MTU {v.mtu})" if v.bridge else "")
            lines.append(f"veth {v.a_ns}:{v.a_if} <-> {to}  [{v.label}]")
        return lines


def spec(plan: Plan) -> LabSpec:
    c = plan.cluster
    net = mgmt_net(c)
    hosts = list(net.hosts())
    rp = root_prefix(c)
    nodes = [
        Node(h.name, ns_prefix(c) + h.name, "spark", h.mgmt_if, str(hosts[i]), f"{rp}m{i}", ",".join(spark.NETDEVS))
        for i, h in enumerate(plan.hosts)
    ]
    # the inventory's other hosts (a monitoring box): booted too, so that a touch would show
    first = len(plan.hosts)
    nodes += [
        Node(name, ns_prefix(c) + name, "host", OTHER_MGMT_IF, str(hosts[first + i]), f"{rp}m{first + i}")
        for i, name in enumerate(plan.left_out)
    ]
    switches = sorted({i.switch for h in plan.hosts for i in h.ifaces if i.switch})
    nodes += [Node(s, ns_prefix(c) + "sw." + s, "switch", lldp_ifs="p*") for s in switches]
    ns_of = {n.name: n.ns for n in nodes}
    veths, seen = [], set()
    for h in plan.hosts:
        for i in h.ifaces:
            if i.switch:
                veths.append(
                    Veth(
                        ns_of[h.name],
                        i.netdev,
                        ns_of[i.switch],
                        i.switch_port_id,
                        plan.mtu,
                        f"cables[{i.cable}] root {i.root}",
                        f"br{i.root}",
                        cable=i.cable,
                        root=i.root,
                    )
                )
            elif (i.cable, i.root) not in seen and i.peer_host and i.peer_netdev:
                seen.add((i.cable, i.root))
                veths.append(
                    Veth(
                        ns_of[h.name],
                        i.netdev,
                        ns_of[i.peer_host],
                        i.peer_netdev,
                        plan.mtu,
                        f"cables[{i.cable}] root {i.root}",
                        cable=i.cable,
                        root=i.root,
                    )
                )
    bridges = tuple((ns_of[s], f"br{r}", plan.mtu) for s in switches for r in (0, 1))
    return LabSpec(c, lab_id(c), lab_dir(c), str(net), f"{rp}br", str(hosts[-1]), tuple(nodes), tuple(veths), bridges)
