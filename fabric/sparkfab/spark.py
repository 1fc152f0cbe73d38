"""Facts about one DGX Spark's ConnectX-7: ports, PCIe roots and the names Linux gives them.

Each QSFP port p is seen through two PCIe Gen5 x4 roots ("twins"):
root 0 as enp1s0f{p}np{p} / rocep1s0f{p} (PCI 0000:01:00.p) and
root 1 as enP2p1s0f{p}np{p} / roceP2p1s0f{p} (PCI 0002:01:00.p).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

PORTS = ("p0", "p1")
ROOTS = (0, 1)
DEFAULT_MGMT_IF = "enP7s7"
#: What one PCIe root carries (ib_write_bw, paper Section 7.3) and what both twins reach.
ROOT_GBPS = 109.0
PORT_GBPS = 200.0

#: A link-speed mode: both PCIe roots of every cabled port (200), one root only (100e, the
#: emulated 100 Gb/s), or a real 100G breakout lane (100). The one spelling of the modes: the
#: inventory model, the plan, the CLI's choices and every table below use this type.
LinkSpeed = Literal["200", "100e", "100"]
LINK_SPEEDS: tuple[LinkSpeed, ...] = get_args(LinkSpeed)
#: The modes a cabled cluster flips between with `linkspeed` (the same cables and lanes).
FLIP_SPEEDS: tuple[LinkSpeed, ...] = ("200", "100e")


@dataclass(frozen=True, kw_only=True)
class Speed:
    """What one link-speed mode means for a Spark: what it runs at, what the hardware shows, and
    the marks `verify --perf` holds it to. Every reader of a mode reads this table; each value is
    given by its name (nine numbers in a row say nothing of which is which)."""

    gbps: float  # the rate NCCL gets: 100e is what one root measured, not its name
    nominal_gbps: float  # the rate it stands for (the lab scales this one down)
    lane_gbps: int  # the switch breakout lane (or direct cable) it needs
    roots: tuple[int, ...]  # the PCIe roots NCCL is given
    text: str  # for people
    #: the port's line rate, what every twin reports (netdev `speed` in Mb/s is 1000 times it,
    #: the RDMA port's `rate` is "<line> Gb/sec"): 100e runs on the 200G link of mode 200
    line_gbps: int
    #: ib_write_bw of one twin while its twin runs too (both PCIe roots of a port share its line)
    root_pass_gbps: float
    #: both twins of a port together
    port_pass_gbps: float
    #: nccl-tests' all_reduce_perf bus bandwidth over the HCA list of the mode
    busbw_pass_gbps: float

    @property
    def netdev_mbps(self) -> int:
        return self.line_gbps * 1000

    @property
    def rdma_rate(self) -> str:
        """The start of `/sys/class/infiniband/<dev>/ports/1/rate` (e.g. "200 Gb/sec (2X NDR)")."""
        return f"{self.line_gbps} Gb/sec"


#: all_reduce_perf's bus bandwidth on healthy 200 Gb/s Spark clusters, Gb/s: four Sparks on a
#: switch, 134 MB to 1 GB, NCCL's own algorithm 175-191 (kindlingai's measurements, as the
#: shared reference's anchors cite them); NVIDIA quotes 20-24 GB/s (160-192 Gb/s) at 16 GB
BUSBW_MEASURED_200 = (175.0, 191.0)
#: how far under the measured range's low end a cluster may fall and still pass
BUSBW_MARGIN = 0.05
_BUSBW_200 = round(BUSBW_MEASURED_200[0] * (1 - BUSBW_MARGIN), 1)

SPEEDS: dict[LinkSpeed, Speed] = {
    "200": Speed(
        gbps=PORT_GBPS,
        nominal_gbps=200.0,
        lane_gbps=200,
        roots=ROOTS,
        text="200 Gb/s",
        line_gbps=200,
        root_pass_gbps=95.0,
        port_pass_gbps=180.0,
        busbw_pass_gbps=_BUSBW_200,
    ),
    # the same cables and link as 200; only NCCL's device list changes (one root carries ~109 Gb/s)
    "100e": Speed(
        gbps=ROOT_GBPS,
        nominal_gbps=100.0,
        lane_gbps=200,
        roots=(0,),
        text="emulated 100 Gb/s",
        line_gbps=200,
        root_pass_gbps=95.0,
        port_pass_gbps=180.0,
        busbw_pass_gbps=95.0,
    ),
    # a real 100G lane (a 4x100G breakout) or a 100G cable (QSFP28) between two Sparks: both
    # twins share 100 Gb/s, so each carries about half of it
    "100": Speed(
        gbps=100.0,
        nominal_gbps=100.0,
        lane_gbps=100,
        roots=ROOTS,
        text="100 Gb/s (100G lanes or cables)",
        line_gbps=100,
        root_pass_gbps=45.0,
        port_pass_gbps=90.0,
        busbw_pass_gbps=90.0,
    ),
}
#: The link rate of each mode, Gb/s.
LINK_GBPS: dict[LinkSpeed, float] = {m: s.gbps for m, s in SPEEDS.items()}


def link_speed(text: object) -> LinkSpeed:
    """A mode read from outside (a CLI argument, a state file), checked against the modes."""
    for m in LINK_SPEEDS:
        if text == m:
            return m
    raise ValueError(f"link speed {text!r}: one of {', '.join(LINK_SPEEDS)}")


def port_index(port: str) -> int:
    return PORTS.index(port)


def netdev(port: str, root: int) -> str:
    p = port_index(port)
    return f"enp1s0f{p}np{p}" if root == 0 else f"enP2p1s0f{p}np{p}"


#: every fabric netdev of a Spark -> its (port, root)
NETDEVS: dict[str, tuple[str, int]] = {netdev(p, r): (p, r) for r in ROOTS for p in PORTS}


def port_of(name: str) -> tuple[str, int] | None:
    """The (port, root) a fabric netdev is a twin of; None for any other netdev."""
    return NETDEVS.get(name)


def rdma_device(port: str, root: int) -> str:
    p = port_index(port)
    return f"rocep1s0f{p}" if root == 0 else f"roceP2p1s0f{p}"


def pci_address(port: str, root: int) -> str:
    return f"{'0000' if root == 0 else '0002'}:01:00.{port_index(port)}"


def pci_sort_key(device: str) -> tuple[int, int]:
    """NCCL orders devices by PCI path when NICs are not merged: root 0 first, then port."""
    root = 0 if device.startswith("rocep") else 1
    return root, int(device[-1])
