"""The resolved plan: the single source of truth every generator, the lab and verify read.

Built once by `sparkfab.resolve.resolve()` from a valid inventory; nothing downstream
re-derives an address, a rank or a peer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from sparkfab.spark import LINK_SPEEDS, LinkSpeed

if TYPE_CHECKING:
    from sparkfab.engines.recipes import Recipe

#: How an instance's Sparks are joined: one Spark, switchless (a cable between each pair of
#: neighbours: pair, triangle, ring) or through a switch.
Topology = Literal["single", "pair", "triangle", "ring", "switched"]
SWITCHLESS: tuple[Topology, ...] = ("pair", "triangle", "ring")


@dataclass(frozen=True)
class Iface:
    """One fabric netdev of one Spark: a twin of a cabled port on one rail."""

    netdev: str
    rdma: str
    pci: str
    port: str
    root: int
    rail: str
    subnet: str
    address: str  # with prefix, e.g. 192.168.100.11/24
    cable: int
    peer_host: str | None = None
    peer_port: str | None = None
    peer_netdev: str | None = None
    peer_address: str | None = None  # without prefix
    switch: str | None = None
    switch_port: str | None = None  # "port/lane"
    #: the port id the switch announces for that lane, as its OS names it (`sparkfab.switches.profiles`)
    switch_port_id: str | None = None

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


@dataclass(frozen=True)
class Route:
    to: str  # a /32 control address
    via: str
    dev: str
    hops: int  # Sparks on the way, the destination included
    source: str | None = None  # preferred source (netplan `from:`): this host's control address


@dataclass(frozen=True)
class Host:
    name: str
    mgmt_address: str
    mgmt_if: str
    ifaces: tuple[Iface, ...]
    hca: dict[LinkSpeed, tuple[str, ...]]  # link-speed mode -> exact NCCL_IB_HCA device list
    control_if: str
    control_address: str
    routes: tuple[Route, ...] = ()
    forwarding: bool = False
    instance: str | None = None
    rank: int | None = None
    ansible: dict[str, Any] = field(default_factory=dict)

    def iface(self, netdev: str) -> Iface:
        return next(i for i in self.ifaces if i.netdev == netdev)

    @property
    def fabric_ifs(self) -> tuple[str, ...]:
        return tuple(i.netdev for i in self.ifaces)


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    prev_host: str | None
    next_host: str | None
    prev_port: str | None
    next_port: str | None


@dataclass(frozen=True)
class Instance:
    name: str
    topology: Topology
    tp: int
    ranks: tuple[Rank, ...]
    launcher: str | None
    backend: Literal["mp", "ray"] | None  # the instance's, else its recipe's (None: no recipe)
    runtime: Literal["docker", "process"] | None  # the instance's, else its recipe's default
    port: int
    flags: dict[str, Any]
    env: dict[str, str]
    master_addr: str
    switch: str | None = None
    model: str | None = None  # replaces the recipe's model
    secrets: tuple[str, ...] = ()  # more env names passed into the engine from the host's secrets file
    hf_cache: str | None = None  # host directory mounted as the container's Hugging Face cache
    recipe: Recipe | None = None  # the launcher's recipe, read at resolve time (rendering reads no files)
    tp_unchecked: str = ""  # why TP could not be checked against the model's architecture ("" : it was, or no recipe)
    memory: tuple[str, ...] = ()  # why its memory settings do not fit its Sparks (validate warns)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(r.host for r in self.ranks)

    @property
    def direct(self) -> bool:
        return self.topology in SWITCHLESS


@dataclass(frozen=True)
class Rail:
    name: str
    subnet: str
    root: int
    cable: int | None
    switch: str | None
    members: tuple[tuple[str, str], ...]  # (host, netdev)


@dataclass(frozen=True)
class Switch:
    name: str
    model: str
    capacity: dict[LinkSpeed, int]  # link-speed mode -> Sparks it carries
    used: int
    os: str = "generic"  # how it names its ports (`sparkfab.switches.profiles`)
    lldp_name: str = ""  # the system name it announces (its key unless the inventory says another)
    ports: int = 0  # front ports (a generic switch's; a catalog model knows its own)
    port_gbps: int = 0  # a generic switch's port speed


#: the Ansible variables that say how a host is reached (shown by `plan`; secrets never are)
CONNECTION_SHOWN = (
    *("ansible_user", "ansible_ssh_user", "ansible_port", "ansible_ssh_private_key_file", "ansible_private_key_file"),
    *("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_become_method", "ansible_become_user"),
    "ansible_connection",
)


def connection_vars(ansible: dict[str, Any]) -> dict[str, Any]:
    """How a host is reached, as `ansible-inventory --host` says it (no password, vaulted or not)."""
    return {k: ansible[k] for k in CONNECTION_SHOWN if k in ansible and isinstance(ansible[k], str | int)}


@dataclass(frozen=True)
class Exporter:
    """The fabric exporter every Spark of the cluster runs (`sparkfab exporter`)."""

    port: int
    interval_s: float
    peak_window_s: int


@dataclass(frozen=True)
class PerfTools:
    """Where nccl-tests and its NCCL are on every Spark (`~/` is the login's home there)."""

    nccl_tests: str = "~/nccl-tests/build"
    nccl: str = "~/nccl/build"
    busbw_min_gbps: float | None = None  # the inventory's all_reduce_perf mark, where it sets one


@dataclass(frozen=True)
class Plan:
    cluster: str
    link_speed: LinkSpeed
    mtu: int
    rail_prefix: int
    control_plane: str
    nccl_version: str
    nccl_graph: bool
    nccl_channels: int
    master_port: int
    hosts: tuple[Host, ...]
    instances: tuple[Instance, ...]
    rails: tuple[Rail, ...]
    switches: tuple[Switch, ...] = field(default_factory=tuple)
    group_vars: dict[str, Any] = field(default_factory=dict)
    netplan_renderer: str = "networkd"
    source: str = ""
    #: the user's groups of the cluster's hosts (carried into the rendered inventory for --limit)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the inventory's hosts outside the cluster: never planned, rendered or touched
    left_out: tuple[str, ...] = ()
    #: hosts whose instance runs at another link-speed mode than the cluster (`linkspeed --instance`)
    host_speeds: dict[str, LinkSpeed] = field(default_factory=dict)
    #: the fabric exporter, where the inventory asks for one
    exporter: Exporter | None = None
    #: where `verify --perf` finds nccl-tests and NCCL on every Spark
    perf_tools: PerfTools = field(default_factory=PerfTools)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def instance(self, name: str) -> Instance:
        return next(i for i in self.instances if i.name == name)

    def switch(self, name: str) -> Switch:
        return next(s for s in self.switches if s.name == name)

    def instance_of(self, host: str) -> Instance | None:
        return next((i for i in self.instances if host in i.hosts), None)

    def with_link_speed(self, mode: LinkSpeed) -> Plan:
        """The whole cluster at `mode` (no instance of its own speed left)."""
        return replace(self, link_speed=mode, host_speeds={})

    def with_instance_speed(self, instance: str, mode: LinkSpeed) -> Plan:
        """One instance's hosts at `mode`, the others as they are."""
        hosts = self.instance(instance).hosts
        speeds = {**self.host_speeds, **{h: mode for h in hosts}}
        return replace(self, host_speeds={h: m for h, m in speeds.items() if m != self.link_speed})

    def mode_of(self, host: str) -> LinkSpeed:
        """The link-speed mode a host runs at."""
        return self.host_speeds.get(host, self.link_speed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("source")
        data.pop("group_vars")
        if not data["host_speeds"]:
            data.pop("host_speeds")
        if data["exporter"] is None:
            data.pop("exporter")
        for inst in data["instances"]:
            inst.pop("recipe")  # the launcher names it
        for host in data["hosts"]:
            host["ansible"] = connection_vars(host["ansible"])
            host["groups"] = sorted(g for g, names in self.groups.items() if host["name"] in names)
        for host in data["hosts"]:
            host["hca"] = {m: list(host["hca"][m]) for m in LINK_SPEEDS}
        return data
