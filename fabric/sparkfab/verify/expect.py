"""What verify holds a host to at its link-speed mode: one record read from `spark.SPEEDS`, so
that no check keeps its own idea of a line rate (a mode added there is checked everywhere).

The lab's veths stand in for the ConnectX-7 ports: they report 10000 Mb/s and have no RDMA
devices, and the collective runs over Gloo on CPUs, so the lab's record says so in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparkfab.spark import LINK_SPEEDS, SPEEDS, LinkSpeed

#: what a veth reports as its speed (Mb/s)
VETH_MBPS = 10000


@dataclass(frozen=True)
class Expect:
    """The expectations of one host at one mode."""

    mode: LinkSpeed
    netdev_mbps: int  # /sys/class/net/<netdev>/speed of every fabric netdev
    rdma_rate: str | None  # the start of each listed RDMA port's rate; None: no RDMA devices here
    root_pass_gbps: float  # ib_write_bw of one twin with both running
    port_pass_gbps: float  # both twins of a port together
    busbw_pass_gbps: float  # all_reduce_perf over the mode's HCA list
    collective: Literal["nccl", "gloo"]  # what `verify --collective` runs over
    roots: tuple[int, ...] = (0, 1)  # the PCIe roots of the devices NCCL_IB_HCA lists
    stand_in: str = ""  # why a value is not the hardware's (the lab)


def expect(mode: LinkSpeed, lab: bool = False) -> Expect:
    s = SPEEDS[mode]
    if lab:
        return Expect(mode, VETH_MBPS, None, 0.0, 0.0, 0.0, "gloo", s.roots, "veth in the lab")
    return Expect(
        mode, s.netdev_mbps, s.rdma_rate, s.root_pass_gbps, s.port_pass_gbps, s.busbw_pass_gbps, "nccl", s.roots
    )


#: (what, how each mode's value is shown) for the side-by-side table of `verify --expectations`
ROWS: tuple[tuple[str, str], ...] = (
    ("netdev speed (Mb/s)", "netdev_mbps"),
    ("RDMA port rate", "rdma_rate"),
    ("PCIe roots in NCCL_IB_HCA", "roots"),
    ("ib_write_bw per twin, both running (Gb/s)", "root_pass_gbps"),
    ("ib_write_bw per port, both twins (Gb/s)", "port_pass_gbps"),
    ("all_reduce_perf busbw (Gb/s)", "busbw_pass_gbps"),
    ("verify --collective over", "collective"),
)


def table(lab: bool = False) -> list[list[str]]:
    """One row per expectation, one column per mode: what `verify --expectations` prints."""
    rows = []
    for label, field in ROWS:
        cells = []
        for m in LINK_SPEEDS:
            value = getattr(expect(m, lab), field)
            if isinstance(value, tuple):
                value = " and ".join(str(r) for r in value)
            cells.append("-" if value is None else (f">= {value:g}" if isinstance(value, float) else str(value)))
        rows.append([label, *cells])
    return rows
