"""Control plane over the fabric (control_plane: fabric, for rings without a management LAN):
forwarding and loose reverse-path filtering (sysctl.d), and a firewall that forwards only
between fabric interfaces and admits the control ports from fabric subnets (nftables; ufw
rules for hosts where ufw is active, as on a stock Spark).

Docker sets the iptables FORWARD policy to DROP. In nftables a drop in any base chain is
final, so the accept in `inet sparkfab` cannot save forwarded traffic from it: relays also
get accept rules in `DOCKER-USER`, the chain Docker jumps to first and never rewrites
(a script, run at apply and by a unit ordered after docker.service)."""

from __future__ import annotations

from sparkfab.plan import Host, Plan
from sparkfab.render import File
from sparkfab.render.text import fill

SYSCTL_PATH = "/etc/sysctl.d/60-sparkfab.conf"
NFT_PATH = "/etc/sparkfab/firewall.nft"
UFW_PATH = "/etc/sparkfab/ufw.rules"
DOCKER_USER_PATH = "/etc/sparkfab/docker-user.sh"
#: kept beside the other files; the role installs them into /etc/systemd/system where systemd runs
DOCKER_UNIT_PATH = "/etc/sparkfab/sparkfab-docker-user.service"
FIREWALL_UNIT_PATH = "/etc/sparkfab/sparkfab-firewall.service"
NFT = "/usr/sbin/nft"
#: marks sparkfab's rules for people reading `iptables -S DOCKER-USER`; verify checks the netdev
#: pairs instead, since nft's JSON does not carry iptables comments
DOCKER_RULE_COMMENT = "sparkfab"
#: NCCL bootstrap and Gloo listen on ephemeral ports (bind to port 0).
EPHEMERAL = "32768-60999"
RAY_PORTS = ("6379", "8265", "10002-19999")
#: `verify --perf`'s perftest: ib_write_bw/ib_write_lat exchange their queue pairs over TCP to the
#: far twin's fabric address on these ports (one a twin of a port, `verify.perf`) before the RDMA
#: test; without them a ring with the control plane over the fabric drops the exchange
PERFTEST_BASE, PERFTEST_COUNT = 18515, 16
PERFTEST_PORTS = f"{PERFTEST_BASE}-{PERFTEST_BASE + PERFTEST_COUNT - 1}"


def control_ports(plan: Plan, host: Host) -> list[str]:
    inst = plan.instance_of(host.name)
    # master port: the engine's rendezvous; master port + 1: `sparkfab verify --collective`
    ports = ["22", str(plan.master_port), str(plan.master_port + 1)]
    if inst is not None:
        ports.append(str(inst.port))
        if inst.backend == "ray":
            ports += list(RAY_PORTS)
    ports += [PERFTEST_PORTS, EPHEMERAL]
    return sorted(set(ports), key=lambda p: int(p.split("-")[0]))


def fabric_subnets(plan: Plan) -> list[str]:
    return [r.subnet for r in plan.rails]


def sysctls(plan: Plan, host: Host) -> dict[str, int]:
    """The kernel settings a Spark's fabric needs, by key (the file below, and what verify reads).

    Both PCIe twins of a port share one wire, so an ARP request for one twin's address reaches
    the other twin too, and by default (arp_ignore 0) Linux answers it there with that twin's
    MAC: a peer's neighbour entry may then send a rail's traffic into the other twin (RoCE
    resolves its destination MAC from that entry). arp_ignore 1 answers only on the netdev that
    holds the address, arp_announce 2 asks with the address of the netdev that sends. With the
    control plane over the fabric, a relaying Spark forwards, and replies may come back on
    another cable than the request went out (rp_filter 2: loose)."""
    out: dict[str, int] = {}
    for i in host.fabric_ifs:
        out[f"net.ipv4.conf.{i}.arp_ignore"] = 1
        out[f"net.ipv4.conf.{i}.arp_announce"] = 2
    if plan.control_plane == "fabric":
        if host.forwarding:
            out["net.ipv4.ip_forward"] = 1
        out |= {f"net.ipv4.conf.{i}.rp_filter": 2 for i in host.fabric_ifs}
    return out


def sysctl(plan: Plan, host: Host) -> File:
    lines = [f"# sparkfab: the fabric of {plan.cluster}/{host.name} (generated)"]
    lines += [f"{key} = {value}" for key, value in sysctls(plan, host).items()]
    return File(SYSCTL_PATH, "\n".join(lines) + "\n")


def nftables(plan: Plan, host: Host) -> File:
    text = fill(
        "firewall.nft.j2",
        cluster=plan.cluster,
        host=host.name,
        ifs=", ".join(f'"{i}"' for i in host.fabric_ifs),
        nets=fabric_subnets(plan),
        ports=control_ports(plan, host),
    )
    return File(NFT_PATH, text, 0o644)


def firewall_unit(plan: Plan, host: Host) -> File:
    """Loads the table at boot, before the network comes up (a reboot otherwise leaves the fabric
    without its input filter until the next apply)."""
    text = fill("firewall.service.j2", cluster=plan.cluster, host=host.name, nft=NFT, rules=NFT_PATH)
    return File(FIREWALL_UNIT_PATH, text, 0o644)


def ufw_rules(plan: Plan, host: Host) -> File:
    """One `ufw` rule per line; the role adds them only where ufw is active."""
    lines = [f"# sparkfab: ufw rules for {plan.cluster}/{host.name}; applied as `ufw <line>`"]
    for i in host.fabric_ifs:
        for net in fabric_subnets(plan):
            for port in control_ports(plan, host):
                lines.append(f"allow in on {i} proto tcp from {net} to any port {port.replace('-', ':')}")
    for a in host.fabric_ifs:
        for b in host.fabric_ifs:
            if a != b and host.forwarding:
                lines.append(f"route allow in on {a} out on {b}")
    return File(UFW_PATH, "\n".join(lines) + "\n")


def forward_pairs(host: Host) -> list[tuple[str, str]]:
    return [(a, b) for a in host.fabric_ifs for b in host.fabric_ifs if a != b]


def docker_user(plan: Plan, host: Host) -> File:
    """Idempotent: inserts only the rules that are missing; prints how many it added."""
    text = fill(
        "docker-user.sh.j2",
        cluster=plan.cluster,
        host=host.name,
        pairs=" ".join(f'"{a} {b}"' for a, b in forward_pairs(host)),
        rule=f'-i "$1" -o "$2" -m comment --comment {DOCKER_RULE_COMMENT} -j ACCEPT',
    )
    return File(DOCKER_USER_PATH, text, 0o755)


def docker_unit(plan: Plan, host: Host) -> File:
    """Runs the script at boot and whenever Docker (re)starts (WantedBy=docker.service)."""
    text = fill("docker-user.service.j2", cluster=plan.cluster, host=host.name, script=DOCKER_USER_PATH)
    return File(DOCKER_UNIT_PATH, text, 0o644)
