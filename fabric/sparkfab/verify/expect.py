"""What verify holds a host to at its link-speed mode: one record read from `spark.SPEEDS`, so
that no check keeps its own idea of a line rate (a mode added there is checked everywhere).
A lab Spark presents the same facts (`sparkfab.lab.image`), so it is held to the same record."""

from __future__ import annotations

from dataclasses import dataclass

from sparkfab.spark import LINK_SPEEDS, SPEEDS, LinkSpeed


@dataclass(frozen=True)
class Expect:
    """The expectations of one host at one mode."""

    mode: LinkSpeed
    netdev_mbps: int  # /sys/class/net/<netdev>/speed of every fabric netdev
    rdma_rate: str  # the start of each listed RDMA port's rate
    roots: tuple[int, ...]  # the PCIe roots of the devices NCCL_IB_HCA lists
    root_pass_gbps: float  # ib_write_bw of one twin with both running
    port_pass_gbps: float  # both twins of a port together
    busbw_pass_gbps: float  # all_reduce_perf over the mode's HCA list


def expect(mode: LinkSpeed) -> Expect:
    s = SPEEDS[mode]
    return Expect(mode, s.netdev_mbps, s.rdma_rate, s.roots, s.root_pass_gbps, s.port_pass_gbps, s.busbw_pass_gbps)


#: (what, which field) for the side-by-side table of `verify --expectations`
ROWS: tuple[tuple[str, str], ...] = (
    ("netdev speed (Mb/s)", "netdev_mbps"),
    ("RDMA port rate", "rdma_rate"),
    ("PCIe roots in NCCL_IB_HCA", "roots"),
    ("ib_write_bw per twin, both running (Gb/s)", "root_pass_gbps"),
    ("ib_write_bw per port, both twins (Gb/s)", "port_pass_gbps"),
    ("all_reduce_perf busbw (Gb/s)", "busbw_pass_gbps"),
)


def table() -> list[list[str]]:
    """One row per expectation, one column per mode: what `verify --expectations` prints."""
    rows = []
    for label, name in ROWS:
        cells = []
        for m in LINK_SPEEDS:
            value = getattr(expect(m), name)
            if isinstance(value, tuple):
                cells.append(" and ".join(str(r) for r in value))
            else:
                cells.append(f">= {value:g}" if isinstance(value, float) else str(value))
        rows.append([label, *cells])
    return rows
