"""Where an RDMA port's facts are: its state, rate, data counters and GID table, files under
sysfs that the checks read by path (gathered with the rest in one round trip)."""

from __future__ import annotations

#: the GID table entries looked at for a netdev's RoCE v2 GID
GID_SLOTS = 16
#: where the RDMA devices are; a device's only port is its `PORT` folder
DEVICES = "/sys/class/infiniband"
PORT = "ports/1"


def port_dir(device: str) -> str:
    """The sysfs folder of the RDMA device's only port."""
    return f"{DEVICES}/{device}/{PORT}"


def port_files(device: str) -> list[str]:
    """Every file the RDMA checks read of `device`."""
    base = port_dir(device)
    slots = [f"{base}/{kind}/{i}" for i in range(GID_SLOTS) for kind in ("gid_attrs/types", "gids")]
    return [f"{base}/state", f"{base}/rate", f"{base}/counters/port_xmit_data", *slots]
