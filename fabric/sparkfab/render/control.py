"""Control plane over the fabric (control_plane: fabric, for rings without a management LAN):
forwarding and loose reverse-path filtering (sysctl.d), and a firewall that forwards only
between fabric interfaces and admits the control ports from fabric subnets (nftables; ufw
rules for hosts where ufw is active, as on a stock Spark)."""

from __future__ import annotations

from sparkfab.plan import Host, Plan
from sparkfab.render import File

SYSCTL_PATH = "/etc/sysctl.d/60-sparkfab.conf"
NFT_PATH = "/etc/sparkfab/firewall.nft"
UFW_PATH = "/etc/sparkfab/ufw.rules"
#: NCCL bootstrap and Gloo listen on ephemeral ports (bind to port 0).
EPHEMERAL = "32768-60999"
RAY_PORTS = ("6379", "8265", "10002-19999")


def control_ports(plan: Plan, host: Host) -> list[str]:
    inst = plan.instance_of(host.name)
    # master port: the engine's rendezvous; master port + 1: `sparkfab verify --collective`
    ports = ["22", str(plan.master_port), str(plan.master_port + 1)]
    if inst is not None:
        ports.append(str(inst.port))
        if inst.backend == "ray":
            ports += list(RAY_PORTS)
    ports.append(EPHEMERAL)
    return sorted(set(ports), key=lambda p: int(p.split("-")[0]))


def fabric_subnets(plan: Plan) -> list[str]:
    return [r.subnet for r in plan.rails]


def sysctl(plan: Plan, host: Host) -> File:
    lines = [f"# sparkfab: control plane over the fabric of {plan.cluster}/{host.name} (generated)"]
    if host.forwarding:
        lines.append("net.ipv4.ip_forward = 1")
    lines += [f"net.ipv4.conf.{i}.rp_filter = 2" for i in host.fabric_ifs]
    return File(SYSCTL_PATH, "\n".join(lines) + "\n")


def nftables(plan: Plan, host: Host) -> File:
    ifs = ", ".join(f'"{i}"' for i in host.fabric_ifs)
    nets = ", ".join(fabric_subnets(plan))
    ports = ", ".join(control_ports(plan, host))
    text = f"""#!/usr/sbin/nft -f
# sparkfab: firewall for the control plane over the fabric of {plan.cluster}/{host.name} (generated)
table inet sparkfab
delete table inet sparkfab
table inet sparkfab {{
\tset fabric_nets {{
\t\ttype ipv4_addr
\t\tflags interval
\t\telements = {{ {nets} }}
\t}}

\tchain input {{
\t\ttype filter hook input priority filter - 10; policy accept;
\t\tiifname {{ {ifs} }} ct state established,related accept
\t\tiifname {{ {ifs} }} ip protocol icmp accept
\t\tiifname {{ {ifs} }} ip saddr @fabric_nets tcp dport {{ {ports} }} accept
\t\tiifname {{ {ifs} }} counter drop
\t}}

\tchain forward {{
\t\ttype filter hook forward priority filter - 10; policy accept;
\t\tiifname {{ {ifs} }} oifname {{ {ifs} }} ip saddr @fabric_nets ip daddr @fabric_nets accept
\t\tiifname {{ {ifs} }} counter drop
\t\toifname {{ {ifs} }} counter drop
\t}}
}}
"""
    return File(NFT_PATH, text, 0o644)


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
