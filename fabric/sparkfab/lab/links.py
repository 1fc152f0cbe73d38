"""The lab's links, through pyroute2: namespaces, the management bridge and its veths, the
fabric veths (one per rail of a cable) and the switch bridges; and their removal by prefix."""

from __future__ import annotations

import os
import time
from typing import Any

from sparkfab.errors import LabError
from sparkfab.lab.spec import LabSpec, Veth, ns_prefix, root_prefix


def ipr() -> Any:
    from pyroute2 import IPRoute

    return IPRoute()


def netns(name: str) -> Any:
    """A handle on a lab namespace that exists (flags=0: never create one by accident)."""
    from pyroute2 import NetNS

    return NetNS(name, flags=0)


def existing_namespaces(cluster: str) -> list[str]:
    from pyroute2 import netns as namespaces_of

    return sorted(n for n in namespaces_of.listnetns() if n.startswith(ns_prefix(cluster)))


def namespaces(spec: LabSpec) -> None:
    from pyroute2 import netns as namespaces_of

    for n in spec.nodes:
        namespaces_of.create(n.ns)
        with netns(n.ns) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


def mgmt(spec: LabSpec) -> None:
    root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        with ipr() as ip:
            ip.link("add", ifname=spec.bridge, kind="bridge")
            br = ip.link_lookup(ifname=spec.bridge)[0]
            ip.addr("add", index=br, address=spec.root_ip, prefixlen=24)
            ip.link("set", index=br, state="up")
            for n in spec.sparks:
                with netns(n.ns) as ns:
                    ns.link("add", ifname=n.mgmt_if, kind="veth", peer={"ifname": n.root_peer, "net_ns_fd": root_fd})
                    idx = ns.link_lookup(ifname=n.mgmt_if)[0]
                    ns.addr("add", index=idx, address=n.mgmt_ip, prefixlen=24)
                    ns.link("set", index=idx, state="up")
                peer = ip.link_lookup(ifname=n.root_peer)[0]
                ip.link("set", index=peer, master=br, state="up")
    finally:
        os.close(root_fd)


def fabric(spec: LabSpec) -> None:
    for ns_name, bridge, mtu in spec.switch_bridges:
        with netns(ns_name) as ns:
            ns.link("add", ifname=bridge, kind="bridge", mtu=mtu)
            ns.link("set", index=ns.link_lookup(ifname=bridge)[0], state="up")
    for v in spec.veths:
        make_veth(v)


def make_veth(v: Veth) -> None:
    """Create a rail inside the Spark's namespace with its final names (networkd v252 does not
    pick up a link renamed after creation), MTU on both ends, both ends up."""
    with netns(v.a_ns) as a:
        peer = {"ifname": v.b_if, "net_ns_fd": v.b_ns, "mtu": v.mtu}
        a.link("add", ifname=v.a_if, kind="veth", mtu=v.mtu, peer=peer)
        a.link("set", index=a.link_lookup(ifname=v.a_if)[0], state="up")
    with netns(v.b_ns) as b:
        idx = b.link_lookup(ifname=v.b_if)[0]
        if v.bridge:
            b.link("set", index=idx, master=b.link_lookup(ifname=v.bridge)[0])
        b.link("set", index=idx, state="up")


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


def root_links(cluster: str) -> list[str]:
    """The root-side links of this lab still present."""
    with ipr() as ip:
        return [
            str(link.get_attr("IFLA_IFNAME"))
            for link in ip.get_links()
            if (link.get_attr("IFLA_IFNAME") or "").startswith(root_prefix(cluster))
        ]
