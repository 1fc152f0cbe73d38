"""Where an RDMA port's facts are read: the files the checks gather for a device."""

from __future__ import annotations

from sparkfab.facts.rdma import GID_SLOTS, port_dir, port_files
from sparkfab.verify.hardware import roce_v2_gid_index


def test_a_ports_files_are_its_state_rate_counter_and_gid_table():
    files = port_files("rocep1s0f1")
    base = port_dir("rocep1s0f1")
    assert base == "/sys/class/infiniband/rocep1s0f1/ports/1"
    assert files[:3] == [f"{base}/state", f"{base}/rate", f"{base}/counters/port_xmit_data"]
    assert len(files) == 3 + 2 * GID_SLOTS and all(f.startswith(base) for f in files)


def test_the_gid_of_an_address_is_found_among_the_files_read():
    base = port_dir("d")
    table = {f"{base}/gid_attrs/types/3": "RoCE v2\n", f"{base}/gids/3": "0000:0000:0000:0000:0000:ffff:c0a8:6402\n"}
    assert set(table) <= set(port_files("d"))
    assert roce_v2_gid_index(table.get, "d", "192.168.100.2") == 3
    assert roce_v2_gid_index(table.get, "d", "192.168.100.9") is None
