"""A Spark's names and the table of what each link-speed mode means (`spark`): the four fabric
netdevs and RDMA devices as the ConnectX-7's twins are named, and the modes' own relations."""

from __future__ import annotations

import pytest

from sparkfab import spark


def test_each_twin_of_each_port_has_its_netdev_rdma_device_and_pci_address():
    rows = [
        (spark.netdev(p, r), spark.rdma_device(p, r), spark.pci_address(p, r)) for r in (0, 1) for p in ("p0", "p1")
    ]
    assert rows == [
        ("enp1s0f0np0", "rocep1s0f0", "0000:01:00.0"),
        ("enp1s0f1np1", "rocep1s0f1", "0000:01:00.1"),
        ("enP2p1s0f0np0", "roceP2p1s0f0", "0002:01:00.0"),
        ("enP2p1s0f1np1", "roceP2p1s0f1", "0002:01:00.1"),
    ]
    assert all(spark.port_of(n) == pr for n, pr in spark.NETDEVS.items()) and spark.port_of("enP7s7") is None
    # NCCL's order without merged NICs: root 0 first, then the port
    assert sorted(["roceP2p1s0f0", "rocep1s0f1", "rocep1s0f0"], key=spark.pci_sort_key) == [
        "rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0",
    ]  # fmt: skip


def test_the_modes_relations():
    s200, s100e, s100 = (spark.SPEEDS[m] for m in ("200", "100e", "100"))
    assert s100e.roots == (0,) and s200.roots == (0, 1)  # 100e: one PCIe root
    assert s100e.line_gbps == s200.line_gbps == 200 and s100.line_gbps == 100  # 100e keeps the 200G link
    assert s100e.nominal_gbps == s200.nominal_gbps / 2 and s100e.gbps == spark.ROOT_GBPS
    assert s100e.lane_gbps == s200.lane_gbps == 200 and s100.lane_gbps == 100
    assert s200.rdma_rate == "200 Gb/sec" and s200.netdev_mbps == 200_000
    for s in (s200, s100e, s100):
        assert s.root_pass_gbps < s.port_pass_gbps and s.busbw_pass_gbps <= s.port_pass_gbps
    assert set(spark.FLIP_SPEEDS) == {"200", "100e"} and set(spark.LINK_SPEEDS) == set(spark.SPEEDS)


@pytest.mark.parametrize("text", ["200", "100e", "100"])
def test_a_mode_is_read_from_its_spelling(text):
    assert spark.link_speed(text) == text


@pytest.mark.parametrize("text", ["100g", 200, "", None])
def test_another_spelling_is_refused_naming_the_modes(text):
    with pytest.raises(ValueError, match="one of 200, 100e, 100"):
        spark.link_speed(text)
