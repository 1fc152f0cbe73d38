"""The lab's links, through pyroute2: namespaces, the management bridge and its veths, the
cables (one bridge each, with a veth to every netdev on the cable) and the switch bridges; and
their removal by prefix.

A Spark's end of a cable starts at the MTU a ConnectX-7 netdev boots with (1500): netplan sets
the plan's; a switch's port has the plan's MTU from the start (the switch's own configuration)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab.spec import LabSpec, Node, Veth, ns_prefix, root_prefix


def ipr() -> Any:
    from pyroute2 import IPRoute

    return IPRoute()


def netns(name: str) -> Any:
    """A handle on a lab namespace that exists (flags=0: never create one by accident)."""
    from pyroute2 import NetNS

    return NetNS(name, flags=0)


#: where this machine keeps its named network namespaces (`ip netns`, pyroute2's `listnetns`)
NETNS_DIR = Path("/run/netns")


def existing_namespaces(cluster: str) -> list[str]:
    """The lab's network namespaces on this machine (read from NETNS_DIR: cheap enough for every
    verb that asks whether a lab is up)."""
    try:
        names = os.listdir(NETNS_DIR)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(ns_prefix(cluster)))


#: the MTU a Spark's fabric netdev has before netplan sets the plan's
BOOT_MTU = 1500


def namespaces(spec: LabSpec) -> None:
    for n in spec.nodes:
        namespace(n.ns)


def namespace(name: str) -> None:
    from pyroute2 import netns as namespaces_of

    namespaces_of.create(name)
    with netns(name) as ns:
        ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


def mgmt(spec: LabSpec) -> None:
    with ipr() as ip:
        ip.link("add", ifname=spec.bridge, kind="bridge")
        br = ip.link_lookup(ifname=spec.bridge)[0]
        ip.addr("add", index=br, address=spec.root_ip, prefixlen=24)
        ip.link("set", index=br, state="up")
    for n in spec.machines:
        mgmt_link(spec, n)


def mgmt_link(spec: LabSpec, n: Node) -> None:
    """A Spark's management port on the lab's bridge, with its address (the site's DHCP, as it were)."""
    root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        with netns(n.ns) as ns:
            ns.link("add", ifname=n.mgmt_if, kind="veth", peer={"ifname": n.root_peer, "net_ns_fd": root_fd})
            idx = ns.link_lookup(ifname=n.mgmt_if)[0]
            ns.addr("add", index=idx, address=n.mgmt_ip, prefixlen=24)
            ns.link("set", index=idx, state="up")
        with ipr() as ip:
            br = ip.link_lookup(ifname=spec.bridge)[0]
            ip.link("set", index=ip.link_lookup(ifname=n.root_peer)[0], master=br, state="up")
    finally:
        os.close(root_fd)


#: a bridge's group_fwd_mask bit for 01:80:c2:00:00:0e: a cable forwards LLDP (it is a wire), a
#: switch's bridge does not (a switch's ports terminate it)
LLDP_FORWARD = 1 << 14


def fabric(spec: LabSpec) -> None:
    """The switches' bridges, one bridge per cable in the wires namespace (no IPv6 there: a wire
    sends nothing of its own), and a veth from every netdev on a cable to its bridge."""
    wires = {n.ns for n in spec.nodes if n.kind == "wires"}
    for ns_name in wires:
        for key in ("all", "default"):
            proc.run(["ip", "netns", "exec", ns_name, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"])
    for ns_name, bridge, mtu in spec.switch_bridges:
        with netns(ns_name) as ns:
            mask = {"br_group_fwd_mask": LLDP_FORWARD} if ns_name in wires else {}
            ns.link("add", ifname=bridge, kind="bridge", mtu=mtu, **mask)
            ns.link("set", index=ns.link_lookup(ifname=bridge)[0], state="up")
    for v in spec.veths:
        make_veth(v)


def make_veth(v: Veth) -> None:
    """Create a netdev of a cable in its namespace with its final name (networkd v252 does not
    pick up a link renamed after creation) and its peer as a port of the cable's bridge, both up
    (a cut one's peer down); a Spark's netdev at the boot MTU, a switch's port at the plan's and
    a port of the switch's bridge."""
    with netns(v.a_ns) as a:
        peer = {"ifname": v.b_if, "net_ns_fd": v.b_ns, "mtu": v.mtu}
        a.link("add", ifname=v.a_if, kind="veth", mtu=v.mtu if v.a_bridge else BOOT_MTU, peer=peer)
        idx = a.link_lookup(ifname=v.a_if)[0]
        if v.a_bridge:
            a.link("set", index=idx, master=a.link_lookup(ifname=v.a_bridge)[0])
        a.link("set", index=idx, state="up")
    with netns(v.b_ns) as b:
        idx = b.link_lookup(ifname=v.b_if)[0]
        if v.bridge:
            b.link("set", index=idx, master=b.link_lookup(ifname=v.bridge)[0])
        b.link("set", index=idx, state="down" if v.cut else "up")


def remove_root_links(cluster: str) -> int:
    prefix = root_prefix(cluster)
    n = 0
    with ipr() as ip:
        for link in ip.get_links():
            name = link.get_attr("IFLA_IFNAME")
            if name and name.startswith(prefix):
                try:
                    ip.link("del", index=link["index"])
                    n += 1
                except Exception:
                    pass
    return n


def wait_gone(cluster: str, timeout: float = 5.0) -> None:
    """Namespace deletion is asynchronous: wait until no root-side peer of ours remains."""
    deadline = time.monotonic() + timeout
    while left := root_links(cluster):
        if time.monotonic() > deadline:
            raise LabError(f"links of lab {cluster} did not go away: {', '.join(left)}")
        time.sleep(0.05)


def wait_gone_link(name: str, timeout: float = 5.0) -> None:
    """Until a root-namespace link is gone (its namespace's removal is asynchronous)."""
    deadline = time.monotonic() + timeout
    with ipr() as ip:
        while ip.link_lookup(ifname=name):
            if time.monotonic() > deadline:
                raise LabError(f"link {name} did not go away")
            time.sleep(0.05)


def root_links(cluster: str) -> list[str]:
    """The root-side links of this lab still present."""
    with ipr() as ip:
        return [
            str(link.get_attr("IFLA_IFNAME"))
            for link in ip.get_links()
            if (link.get_attr("IFLA_IFNAME") or "").startswith(root_prefix(cluster))
        ]
