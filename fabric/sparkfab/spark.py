"""Facts about one DGX Spark's ConnectX-7: ports, PCIe roots and the names Linux gives them.

Each QSFP port p is seen through two PCIe Gen5 x4 roots ("twins"):
root 0 as enp1s0f{p}np{p} / rocep1s0f{p} (PCI 0000:01:00.p) and
root 1 as enP2p1s0f{p}np{p} / roceP2p1s0f{p} (PCI 0002:01:00.p).
"""

from __future__ import annotations

PORTS = ("p0", "p1")
ROOTS = (0, 1)
DEFAULT_MGMT_IF = "enP7s7"
#: What one PCIe root carries (ib_write_bw, paper Section 7.3) and what both twins reach.
ROOT_GBPS = 109.0
PORT_GBPS = 200.0
#: The link rate of each link-speed mode: 200, emulated 100 (one root: what it measured), 100.
LINK_GBPS = {"200": PORT_GBPS, "100e": ROOT_GBPS, "100": 100.0}


def port_index(port: str) -> int:
    return PORTS.index(port)


def netdev(port: str, root: int) -> str:
    p = port_index(port)
    return f"enp1s0f{p}np{p}" if root == 0 else f"enP2p1s0f{p}np{p}"


def rdma_device(port: str, root: int) -> str:
    p = port_index(port)
    return f"rocep1s0f{p}" if root == 0 else f"roceP2p1s0f{p}"


def pci_address(port: str, root: int) -> str:
    return f"{'0000' if root == 0 else '0002'}:01:00.{port_index(port)}"


def pci_sort_key(device: str) -> tuple[int, int]:
    """NCCL orders devices by PCI path when NICs are not merged: root 0 first, then port."""
    root = 0 if device.startswith("rocep") else 1
    return root, int(device[-1])
