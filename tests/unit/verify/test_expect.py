"""What a link-speed mode means to verify's checks (`verify.expect`), from the mode table."""

from __future__ import annotations

from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


def test_expectations_come_from_the_mode_table():
    """Every mode's expectations, side by side; 100e keeps the 200G link and NCCL's one root."""
    from sparkfab.verify.expect import table

    rows = {r[0]: r[1:] for r in table()}
    assert rows["netdev speed (Mb/s)"] == ["200000", "200000", "100000"]
    assert rows["RDMA port rate"] == ["200 Gb/sec", "200 Gb/sec", "100 Gb/sec"]
    assert rows["all_reduce_perf busbw (Gb/s)"] == [">= 166.2", ">= 95", ">= 90"]  # 175 measured, less 5 %
    assert rows["ib_write_bw per port, both twins (Gb/s)"] == [">= 180", ">= 180", ">= 90"]
    assert rows["PCIe roots in NCCL_IB_HCA"] == ["0 and 1", "0", "0 and 1"]
