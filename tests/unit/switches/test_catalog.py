"""The switch catalog (`switches.catalog`): how many Sparks a switch carries at each lane speed,
the paper's Section 2.3 sizing (a 400G QSFP-DD port is 2 x 200G or 4 x 100G)."""

from __future__ import annotations

from sparkfab.switches import catalog


def test_the_papers_switches_carry_the_papers_sparks():
    crs804, crs812 = catalog.MODELS["CRS804"], catalog.MODELS["CRS812"]
    assert (crs804.capacity(200), crs804.capacity(100)) == (8, 16)
    # the CRS812's two 200G QSFP56 ports take one Spark each at 200G, none at 100G
    assert (crs812.capacity(200), crs812.capacity(100)) == (6, 8)
    assert crs812.lanes(3, 200) == 1 and crs812.lanes(3, 100) == 0 and not crs812.has_port(5)
    assert crs804.max_lanes == 4 and crs804.port_count == 4


def test_the_smallest_switch_that_carries_a_cluster():
    assert catalog.smallest_switch(8, 200) == "CRS804"
    assert catalog.smallest_switch(6, 200) == "CRS812"
    assert catalog.smallest_switch(17, 100) is None


def test_a_generic_switch_breaks_its_ports_out_by_their_speed():
    sw = catalog.generic(32, 400)
    assert (sw.capacity(200), sw.capacity(100)) == (64, 128)
    assert catalog.generic(8, 200).lanes(1, 100) == 2 and catalog.generic(8, 100).lanes(1, 200) == 0
    assert catalog.LANE_GBPS == {"200": 200, "100e": 200, "100": 100}
