"""Every check verify and preflight report, by name: one table that the checks build their rows
from (`Check`), the verb reads back by member, and the docs' reference page is generated from
(`docs/reference/checks.md`, `scripts/docs_reference.py`).

A row's `check` is a `Check` member, a `str` as well: JSON reports and their readers (`graph
--verify`, a site's own tooling) see the same names as before the table existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Check(StrEnum):
    # reaching the host
    SSH = "ssh"
    SUDO = "sudo"
    # the fabric netdevs and their files
    NETDEV = "netdev"
    UP = "up"
    CARRIER = "carrier"
    MTU = "mtu"
    IPV4 = "ipv4"
    SPEED = "speed"
    SYSCTL = "sysctl"
    FIREWALL = "firewall"
    FORWARD_POLICY = "forward-policy"
    FILE = "file"
    NETPLAN = "netplan"
    CABLING = "cabling"
    # across ranks
    JUMBO_PING = "jumbo-ping"
    REACH = "reach"
    TCP = "tcp"
    ENGINE_FLAGS = "engine-flags"
    INSTANCE = "instance"
    COLLECTIVE = "collective"
    # RDMA
    RDMA = "rdma"
    RDMA_STATE = "rdma-state"
    RDMA_RATE = "rdma-rate"
    RDMA_GID = "rdma-gid"
    RDMA_COUNTERS = "rdma-counters"
    # the engine and its image
    ENGINE = "engine"
    IMAGE = "image"
    NCCL_VERSION = "nccl-version"
    NCCL_TRANSPORT = "nccl-transport"
    DOCKER = "docker"
    MODEL = "model"
    PORT = "port"
    # a Spark as shipped
    TOOLS = "tools"
    CLOCK = "clock"
    MPI = "mpi"
    MPI_SSH = "mpi-ssh"
    # --perf
    IB_WRITE_BW = "ib_write_bw"
    IB_WRITE_LAT = "ib_write_lat"
    PORT_BW = "port-bw"
    ALL_REDUCE_PERF = "all_reduce_perf"
    NCCL_TESTS = "nccl-tests"


VERIFY, PREFLIGHT, BOTH = "verify", "preflight", "verify, preflight"


@dataclass(frozen=True, kw_only=True)
class About:
    """What a check is: the verb that reports it, what a row is about (`subject`), what it reads
    on the host, and whether only real hardware can pass it (the lab's Sparks have no RDMA)."""

    verb: str
    subject: str
    reads: str
    hardware: bool = False


CHECKS: dict[Check, About] = {
    Check.SSH: About(verb=BOTH, subject="the login", reads="ssh as Ansible connects"),
    Check.SUDO: About(verb=PREFLIGHT, subject="root", reads="`sudo -n` where the login is not root"),
    Check.NETDEV: About(verb=PREFLIGHT, subject="a fabric netdev", reads="`ip -j link`: present, carrier, state"),
    Check.UP: About(verb=VERIFY, subject="a fabric netdev", reads="`ip -j link`: UP"),
    Check.CARRIER: About(
        verb=VERIFY, subject="a fabric netdev", reads="`ip -j link`: carrier (a cable and its far end)"
    ),
    Check.MTU: About(verb=VERIFY, subject="a fabric netdev", reads="`ip -j link`: the planned MTU"),
    Check.IPV4: About(verb=VERIFY, subject="a fabric netdev", reads="`ip -j addr`: exactly the planned IPv4"),
    Check.SPEED: About(verb=VERIFY, subject="a fabric netdev", reads="/sys/class/net/*/speed at the host's mode"),
    Check.SYSCTL: About(verb=VERIFY, subject="a sysctl key", reads="/proc/sys: forwarding, rp_filter, ARP"),
    Check.FIREWALL: About(verb=VERIFY, subject="nft's sparkfab table", reads="`nft -j list ruleset`"),
    Check.FORWARD_POLICY: About(
        verb=BOTH, subject="an instance's relays", reads="every forward hook's chains (Docker's FORWARD)"
    ),
    Check.FILE: About(verb=VERIFY, subject="a rendered file", reads="its bytes against the render"),
    Check.NETPLAN: About(verb=PREFLIGHT, subject="another netplan file", reads="/etc, /run and /lib netplan"),
    Check.CABLING: About(verb=VERIFY, subject="a fabric port", reads="lldpd's neighbours against the plan"),
    Check.JUMBO_PING: About(verb=VERIFY, subject="a rail's peer", reads="ping with DF at the MTU"),
    Check.REACH: About(verb=VERIFY, subject="a pair of ranks", reads="ping of the control address"),
    Check.TCP: About(verb=VERIFY, subject="a pair of ranks", reads="a TCP connect to the master and API ports"),
    Check.ENGINE_FLAGS: About(verb=VERIFY, subject="an instance", reads="the engine-flag hash on every rank"),
    Check.INSTANCE: About(verb=BOTH, subject="an instance a --limit holds in part", reads="nothing: skipped"),
    Check.COLLECTIVE: About(verb=VERIFY, subject="an instance", reads="an all-reduce on every rank (--collective)"),
    Check.RDMA: About(verb=PREFLIGHT, subject="an RDMA device", reads="`ibdev2netdev`, its state"),
    Check.RDMA_STATE: About(verb=VERIFY, subject="an RDMA device", reads="sysfs ports/1/state: ACTIVE", hardware=True),
    Check.RDMA_RATE: About(
        verb=VERIFY, subject="an RDMA device", reads="sysfs ports/1/rate at the mode", hardware=True
    ),
    Check.RDMA_GID: About(
        verb=VERIFY, subject="an RDMA device", reads="sysfs GIDs: an IPv4 RoCE v2 one", hardware=True
    ),
    Check.RDMA_COUNTERS: About(verb=VERIFY, subject="an RDMA device", reads="sysfs hw_counters", hardware=True),
    Check.ENGINE: About(
        verb=VERIFY, subject="a rank's engine", reads="the engine's process on the rank (as `serve status`)"
    ),
    Check.IMAGE: About(verb=BOTH, subject="an instance", reads="`docker image inspect` on every rank"),
    Check.NCCL_VERSION: About(verb=BOTH, subject="an instance", reads="torch's NCCL inside the image"),
    Check.NCCL_TRANSPORT: About(verb=VERIFY, subject="a rank's engine", reads="NCCL's network in the engine's log"),
    Check.DOCKER: About(verb=PREFLIGHT, subject="Docker", reads="GPU support in `docker info`"),
    Check.MODEL: About(verb=PREFLIGHT, subject="the model", reads="the Hugging Face cache on the host"),
    Check.PORT: About(verb=PREFLIGHT, subject="a port the instance serves on", reads="`ss`: free or its own"),
    Check.TOOLS: About(verb=PREFLIGHT, subject="a program", reads="`command -v` on root's PATH"),
    Check.CLOCK: About(verb=PREFLIGHT, subject="NTP", reads="`timedatectl`: synchronised"),
    Check.MPI: About(verb=PREFLIGHT, subject="an instance", reads="mpirun and all_reduce_perf on rank 0"),
    Check.MPI_SSH: About(verb=PREFLIGHT, subject="rank 0 to a rank", reads="ssh between Sparks for mpirun"),
    Check.IB_WRITE_BW: About(verb=VERIFY, subject="a rail", reads="perftest's ib_write_bw (--perf)", hardware=True),
    Check.IB_WRITE_LAT: About(verb=VERIFY, subject="a rail", reads="perftest's ib_write_lat (--perf)", hardware=True),
    Check.PORT_BW: About(
        verb=VERIFY, subject="a port (both twins)", reads="ib_write_bw on both twins at once (--perf)", hardware=True
    ),
    Check.ALL_REDUCE_PERF: About(
        verb=VERIFY, subject="an instance", reads="nccl-tests' all_reduce_perf: busbw against the mark", hardware=True
    ),
    Check.NCCL_TESTS: About(
        verb=VERIFY, subject="an instance", reads="all_reduce_perf and one NCCL on every rank (--perf)", hardware=True
    ),
}
