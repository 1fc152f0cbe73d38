"""verify's hardware checks (`verify.hardware`): the nccl-tests and perftest parsers on captured runs,
the RoCE v2 GID index, and the RDMA checks on a fake sysfs at each mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkfab.resolve import load_plan
from sparkfab.verify import hardware
from sparkfab.verify.result import FAIL, PASS
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


PERFTEST_BW = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : rocep1s0f0
 Number of qps   : 2            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 1048576    62531            0.00               109.27             0.013026
---------------------------------------------------------------------------------------
"""


PERFTEST_LAT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 8       2000          1.38           4.71         1.44                1.45             0.04            1.62                    4.71
"""


def _fake_sysfs(tmp: Path, device: str, address: str, index: int) -> None:
    base = tmp / f"sys/class/infiniband/{device}/ports/1"
    (base / "gid_attrs/types").mkdir(parents=True)
    (base / "gids").mkdir(parents=True)
    (base / "counters").mkdir(parents=True)
    a, b, c, d = (int(x) for x in address.split("."))
    for i in range(8):
        kind = "RoCE v2" if i % 2 else "IB/RoCE v1"
        gid = (
            f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"
            if i in (index - 1, index)
            else f"fe80:0000:0000:0000:0000:0000:0000:000{i}"
        )
        (base / f"gid_attrs/types/{i}").write_text(kind + "\n")
        (base / f"gids/{i}").write_text(gid + "\n")
    (base / "state").write_text("4: ACTIVE\n")
    (base / "rate").write_text("200 Gb/sec (4X NDR)\n")
    (base / "counters/port_xmit_data").write_text("123456\n")


@pytest.mark.parametrize(
    "name,rows,avg",
    [
        ("all_reduce_perf_2xH200_nvlink.txt", 14, 79.2011),
        ("all_reduce_perf_2xH200_socket_lo.txt", 13, None),
        ("all_gather_perf_2xH200_nvlink.txt", None, None),
    ],
)
def test_nccl_tests_parser_on_captured_runs(name, rows, avg):
    path = CAPTURED / name
    parsed, got_avg = hardware.parse_nccl_tests(path.read_text())
    if rows is not None:
        assert len(parsed) == rows
    if avg is not None:
        assert got_avg == avg
    if name == "all_reduce_perf_2xH200_nvlink.txt":
        last = parsed[-1]
        assert (last.size, last.dtype, last.time_us, last.busbw, last.ip_busbw) == (
            536870912,
            "float",
            1709.40,
            314.07,
            313.92,
        )
        # busbw = algbw x 2(N-1)/N with N = 2 ranks
        assert all(abs(r.busbw - r.algbw) < 0.011 for r in parsed)


def test_perftest_parsers_read_the_documented_tables():
    rows = hardware.parse_ib_write_bw(PERFTEST_BW)
    assert len(rows) == 1 and rows[0].size == 1048576 and rows[0].avg_gbps == 109.27
    lat = hardware.parse_ib_write_lat(PERFTEST_LAT)
    assert lat["t_typical"] == 1.44 and lat["p99"] == 1.62 and lat["bytes"] == 8


def test_gid_index_is_derived_not_assumed(tmp_path):
    _fake_sysfs(tmp_path, "rocep1s0f1", "192.168.100.1", 5)  # v1 at 4, v2 at 5 (the table moved)

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    assert hardware.roce_v2_gid_index(read, "rocep1s0f1", "192.168.100.1") == 5
    assert hardware.roce_v2_gid_index(read, "rocep1s0f1", "192.168.100.2") is None


def test_rdma_checks_on_a_fake_sysfs(tmp_path):
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    host = plan.host("spark-a")
    for i in host.ifaces:
        _fake_sysfs(tmp_path, i.rdma, i.ip, 3)

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    results = hardware.rdma_checks(host, read, "200")
    assert len(results) == 8 and all(r.status == PASS for r in results), results
    (tmp_path / "sys/class/infiniband/roceP2p1s0f1/ports/1/state").write_text("1: DOWN\n")
    assert [r.subject for r in hardware.rdma_checks(host, read, "200") if r.status == FAIL] == ["roceP2p1s0f1"]
    assert len(hardware.rdma_checks(host, read, "100e")) == 4  # only root 0 is listed at 100e


@pytest.mark.parametrize("example", ["switch8-crs812-100", "switch16-crs804-100"])
def test_a_100g_cluster_passes_at_100g_and_fails_a_200g_expectation(tmp_path, example):
    """The shipped 100G examples: every twin at "100 Gb/sec (2X HDR)" passes at their mode 100,
    and the same hardware read against mode 200 fails every listed device's rate."""
    plan = load_plan(str(REPO / f"inventory/{example}.yml"))
    assert plan.link_speed == "100"
    host = plan.hosts[0]
    for i in host.ifaces:
        _fake_sysfs(tmp_path, i.rdma, i.ip, 3)
        (tmp_path / f"sys/class/infiniband/{i.rdma}/ports/1/rate").write_text("100 Gb/sec (2X HDR)\n")

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    assert all(r.status == PASS for r in hardware.rdma_checks(host, read, "100"))
    wrong = [r for r in hardware.rdma_checks(host, read, "200") if r.status == FAIL]
    assert [(r.check, r.expected) for r in wrong] == [("rdma-rate", "200 Gb/sec")] * len(host.hca["200"])
