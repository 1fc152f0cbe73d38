"""Hardware-only facts (RDMA devices, GIDs, perftest and nccl-tests output), read through
one small probe so that captured samples and fake sysfs trees stand in for real Sparks."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from sparkfab.facts import rdma
from sparkfab.plan import Host
from sparkfab.spark import SPEEDS, LinkSpeed
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, Result

Reader = Callable[[str], str | None]  # path under /sys -> content, None when absent


def roce_v2_gid_index(read: Reader, device: str, address: str, limit: int = rdma.GID_SLOTS) -> int | None:
    """The index of the IPv4-mapped RoCE v2 GID of `address` (derived, never assumed)."""
    want = ipaddress.IPv4Address(address).packed.hex()
    tail = f"ffff:{want[:4]}:{want[4:]}"
    base = rdma.port_dir(device)
    for i in range(limit):
        kind = (read(f"{base}/gid_attrs/types/{i}") or "").strip()
        gid = (read(f"{base}/gids/{i}") or "").strip().lower()
        if kind == "RoCE v2" and gid.endswith(tail):
            return i
    return None


def rdma_checks(host: Host, read: Reader, mode: LinkSpeed, graph: bool = False) -> list[Result]:
    """Every device of the mode's HCA list; with an NCCL graph they must all be ACTIVE, since
    the graph's net ids are positions in NCCL's list of active devices (a down port shifts them)."""
    why_active = "the NCCL graph numbers active devices: one down shifts every id after it" if graph else ""
    out = []
    for iface in host.ifaces:
        if iface.rdma not in host.hca[mode]:
            continue
        base = rdma.port_dir(iface.rdma)
        state = (read(f"{base}/state") or "absent").strip()
        out.append(Result.compare(Check.RDMA_STATE, host.name, iface.rdma, "4: ACTIVE", state, why_active))
        rate = (read(f"{base}/rate") or "absent").strip()
        want = SPEEDS[mode].rdma_rate
        ok = rate == want or rate.startswith(want + " ")
        out.append(
            Result(
                check=Check.RDMA_RATE,
                host=host.name,
                subject=iface.rdma,
                expected=want,
                actual=rate,
                status=PASS if ok else FAIL,
            )
        )
        idx = roce_v2_gid_index(read, iface.rdma, iface.ip)
        out.append(
            Result(
                check=Check.RDMA_GID,
                host=host.name,
                subject=iface.rdma,
                expected=f"RoCE v2 GID of {iface.ip}",
                actual="absent" if idx is None else f"index {idx}",
                status=FAIL if idx is None else PASS,
            )
        )
        data = read(f"{base}/counters/port_xmit_data")
        out.append(
            Result(
                check=Check.RDMA_COUNTERS,
                host=host.name,
                subject=iface.rdma,
                expected="readable",
                actual="readable" if data else "absent",
                status=PASS if data and data.strip().isdigit() else FAIL,
            )
        )
    return out


@dataclass(frozen=True)
class PerfRow:
    size: int
    iterations: int
    peak_gbps: float
    avg_gbps: float


def parse_ib_write_bw(text: str) -> list[PerfRow]:
    """perftest's bandwidth table with --report_gbits: #bytes #iterations BW peak BW average MsgRate."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit():
            try:
                rows.append(PerfRow(int(parts[0]), int(parts[1]), float(parts[2]), float(parts[3])))
            except ValueError:
                continue
    return rows


def parse_ib_write_lat(text: str) -> dict[str, float]:
    """perftest's latency table: #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9 (usec)."""
    cols = ("bytes", "iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9")
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 7 and parts[0].isdigit() and parts[1].isdigit():
            return {k: float(v) for k, v in zip(cols, parts, strict=False)}
    return {}


@dataclass(frozen=True)
class NcclRow:
    size: int
    count: int
    dtype: str
    time_us: float
    algbw: float
    busbw: float
    wrong: str
    ip_time_us: float
    ip_algbw: float
    ip_busbw: float


_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+(.*)$")


def parse_nccl_tests(text: str) -> tuple[list[NcclRow], float | None]:
    """nccl-tests table rows (out-of-place and in-place) and the `# Avg bus bandwidth` line.
    Lines NCCL interleaves (`host:pid:tid [n] NCCL INFO ...`) are ignored."""
    rows = []
    avg = None
    for line in text.splitlines():
        if line.startswith("# Avg bus bandwidth"):
            avg = float(line.split(":")[1])
            continue
        m = _ROW.match(line)
        if not m or "NCCL" in line:
            continue
        rest = m.group(6).split()
        if len(rest) < 8:
            continue
        rows.append(
            NcclRow(
                int(m.group(1)),
                int(m.group(2)),
                m.group(3),
                float(rest[0]),
                float(rest[1]),
                float(rest[2]),
                rest[3],
                float(rest[4]),
                float(rest[5]),
                float(rest[6]),
            )
        )
    return rows, avg
