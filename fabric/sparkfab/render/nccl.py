"""NCCL environment per host and link-speed mode, and the optional ring graph XML.

Switched: exact-match HCA list of the cabled port's twins (one root at 100e).
Direct (pair, triangle, ring): the ring settings of the four-Spark write-up, subnet-aware
routing with the rail prefix, all cabled devices (root 0 only at 100e), no pinned GID.
"""

from __future__ import annotations

from sparkfab import spark
from sparkfab.plan import Host, Instance, Plan
from sparkfab.render import File

ENV_PATH = "/etc/sparkfab/nccl.env"
GRAPH_PATH = "/etc/sparkfab/nccl-graph.xml"
SUBNET_AWARE_SINCE = (2, 30, 7)

_MODE_TEXT: dict[spark.LinkSpeed, str] = {
    "200": "200 Gb/s: both PCIe roots",
    "100e": "emulated 100 Gb/s: PCIe root 0 only",
    "100": "100 Gb/s breakout: both PCIe roots",
}


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def warnings(plan: Plan) -> list[str]:
    direct = [i.name for i in plan.instances if i.direct]
    if direct and version_tuple(plan.nccl_version) < SUBNET_AWARE_SINCE:
        return [
            f"NCCL {plan.nccl_version} predates 2.30.7: NCCL_IB_SUBNET_AWARE_ROUTING is ignored, "
            f"so the switchless instance(s) {', '.join(direct)} may pick a device with no path "
            "to the next rank (ibv_modify_qp ... Connection timed out)"
        ]
    return []


def env_vars(plan: Plan, host: Host, inst: Instance | None) -> list[tuple[str, str]]:
    mode = plan.mode_of(host.name)
    exact = "=" + host.control_if
    env = [
        ("NCCL_IB_HCA", "=" + ",".join(host.hca[mode])),
        ("NCCL_IB_DISABLE", "0"),
        ("NCCL_IB_ADDR_FAMILY", "AF_INET"),
        ("NCCL_IB_ROCE_VERSION_NUM", "2"),
        ("NCCL_SOCKET_IFNAME", exact),
        ("GLOO_SOCKET_IFNAME", host.control_if),
    ]
    if inst is not None and inst.direct:
        env += [
            ("NCCL_ALGO", "Ring"),
            ("NCCL_IB_SUBNET_AWARE_ROUTING", "1"),
            ("NCCL_IB_SUBNET_PREFIX_LEN", str(plan.rail_prefix)),
            ("NCCL_IB_MERGE_NICS", "0"),
            ("NCCL_CROSS_NIC", "1"),
            ("NCCL_NET_PLUGIN", "none"),
        ]
        if plan.nccl_graph:
            env.append(("NCCL_GRAPH_FILE", GRAPH_PATH))
    return env


def nccl_env(plan: Plan, host: Host) -> File:
    inst = plan.instance_of(host.name)
    lines = [
        f"# sparkfab: NCCL for {plan.cluster}/{host.name} at {_MODE_TEXT[plan.mode_of(host.name)]}",
        f"# topology {inst.topology if inst else 'none'}; generated, edit the inventory instead",
    ]
    lines += [f"# WARNING: {w}" for w in warnings(plan)]
    lines += [f"{k}={v}" for k, v in env_vars(plan, host, inst)]
    return File(ENV_PATH, "\n".join(lines) + "\n")


def graph_xml(plan: Plan, host: Host) -> File | None:
    """A ring graph in NCCL's own schema (dev ids are hex; one GPU per node, dev 0).

    Channel c receives on the previous port and sends on the next, alternating PCIe roots.
    NCCL honours only the first <net> of a channel for both directions when a node has one
    GPU, which is why subnet-aware routing stays on alongside the graph.
    """
    inst = plan.instance_of(host.name)
    if not plan.nccl_graph or inst is None or not inst.direct:
        return None
    rank = next(r for r in inst.ranks if r.host == host.name)
    mode = plan.mode_of(host.name)
    devices = list(host.hca[mode])
    roots = spark.SPEEDS[mode].roots
    prev = [devices.index(spark.rdma_device(rank.prev_port or "p0", r)) for r in roots]
    nxt = [devices.index(spark.rdma_device(rank.next_port or "p0", r)) for r in roots]
    chans = "".join(
        f'    <channel><net dev="{prev[c % len(roots)]:x}"/><gpu dev="0"/>'
        f'<net dev="{nxt[c % len(roots)]:x}"/></channel>\n'
        for c in range(plan.nccl_channels)
    )
    xml = (
        '<graphs version="1">\n'
        f'  <graph id="0" pattern="4" crossnic="1" nchannels="{plan.nccl_channels}" '
        'speedintra="0.24" speedinter="0.24" latencyinter="0" typeintra="LOC" typeinter="P2C" '
        f'samechannels="1">\n{chans}  </graph>\n</graphs>\n'
    )
    return File(GRAPH_PATH, xml)
