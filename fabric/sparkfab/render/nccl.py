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

_ROOTS_TEXT = {(0, 1): "both PCIe roots", (0,): "PCIe root 0 only"}
_MODE_TEXT: dict[spark.LinkSpeed, str] = {m: f"{s.text}: {_ROOTS_TEXT[s.roots]}" for m, s in spark.SPEEDS.items()}


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def warnings(plan: Plan) -> list[str]:
    """Switchless instances whose NCCL predates subnet-aware routing: the NCCL their recipe's
    image carries (`nccl_version:` in the recipe), else the inventory's `nccl_version`."""
    out = []
    for inst in plan.instances:
        if not inst.direct:
            continue
        own = inst.recipe.nccl_version if inst.recipe is not None else ""
        version, source = (own, f"{inst.recipe.image}'s NCCL") if own and inst.recipe else (plan.nccl_version, "NCCL")
        if version_tuple(version) < SUBNET_AWARE_SINCE:
            out.append(
                f"{source} {version} predates 2.30.7: NCCL_IB_SUBNET_AWARE_ROUTING is ignored, so the "
                f"switchless instance {inst.name} may pick a device with no path to the next rank "
                "(ibv_modify_qp ... Connection timed out); verify and preflight read the image's own NCCL"
            )
    return out


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
        # the lines verify's transport check reads (NET/IB or a fallback to sockets) are INFO
        # lines of NCCL's INIT and NET subsystems: those two only, a few dozen lines per
        # communicator at start-up and nothing per step (NCCL's src/init.cc, net_ib/init.cc)
        ("NCCL_DEBUG", "INFO"),
        ("NCCL_DEBUG_SUBSYS", "INIT,NET"),
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
