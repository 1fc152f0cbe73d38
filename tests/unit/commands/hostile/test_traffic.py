"""Hostile and careless input to `sparkfab traffic`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import os
import struct

import pytest

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import FIFO, c, header, sample_file, samples_of, ticks, traffic

CASES = [
    c("traffic-missing", "traffic {d}/nope.bin", 5, r"nope\.bin"),
    c("traffic-directory", "traffic {d}", 2, r"is a directory"),
    traffic("traffic-garbage", "", 2, r"s\.bin: not a sparkfab sample file", data=os.urandom(4096)),
    traffic("traffic-empty-file", "", 2, r"s\.bin: not a sparkfab sample file", data=b""),
    traffic(
        "traffic-header-length-huge",
        "",
        2,
        r"s\.bin: .*header",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2**31) + b"{}",
    ),
    traffic(
        "traffic-header-not-json",
        "",
        2,
        r"s\.bin: .*header",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 5) + b"{nope",
    ),
    traffic(
        "traffic-header-list", "", 2, r"s\.bin: .*header", data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2) + b"[]"
    ),
    traffic(
        "traffic-header-no-counters",
        "",
        2,
        r"s\.bin: .*counters",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2) + b"{}",
    ),
    traffic(
        "traffic-header-counters-bad",
        "",
        2,
        r"s\.bin: .*counters",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 17) + b'{"counters": [1]}',
    ),
    traffic(
        "traffic-no-records", "", 2, r"s\.bin: [01] sample\(s\): rates need at least two", data=sample_file(records=0)
    ),
    traffic(
        "traffic-one-record", "", 2, r"s\.bin: [01] sample\(s\): rates need at least two", data=sample_file(records=1)
    ),
    traffic("traffic-torn-record", "--format json", 0, r"", data=sample_file()[:-7]),
    traffic("traffic-intervals-zero", "--intervals 0", 2, r"--intervals"),
    traffic("traffic-intervals-tiny", "--intervals 1us", 2, r"--intervals"),
    traffic("traffic-intervals-negative", "--intervals=-5ms", 2, r"--intervals"),
    traffic("traffic-intervals-word", "--intervals fast", 2, r"--intervals.*fast"),
    traffic("traffic-intervals-empty", ("--intervals", ""), 2, r"--intervals"),
    traffic("traffic-intervals-nan", "--intervals nanms", 2, r"--intervals"),
    traffic("traffic-intervals-many", "--intervals " + ",".join(["1ms"] * 500), 2, r"--intervals"),
    traffic("traffic-window-reversed", "--window 5:1", 2, r"--window"),
    traffic("traffic-window-word", "--window a:b", 2, r"--window"),
    traffic("traffic-window-one", "--window 3", 2, r"--window"),
    traffic("traffic-window-nan", "--window nan:1", 2, r"--window"),
    traffic("traffic-plot-dir", "--plot {d}", 2, r"(is a directory|\.png)"),
    traffic("traffic-plot-not-png", "--plot {d}/x.txt", 2, r"\.png"),
    c(
        "traffic-plot-over-file",
        "traffic {d}/s.bin --plot {d}/x.png",
        2,
        r"x\.png exists and sparkfab did not write it",
        files={"s.bin": sample_file(), "x.png": "mine"},
    ),
    traffic("traffic-plot-over-input", "--plot {d}/s.bin", 2, r"(\.png|input)"),
    traffic("traffic-ok", "--format json", 0, r""),
    c("traffic-fifo", "traffic {d}/s.bin", 2, r"s\.bin: is not a regular file", files={"s.bin": FIFO}),
    traffic("traffic-plot-fifo", "--plot {d}/p.png", 2, r"p\.png is not a regular file", files_extra={"p.png": FIFO}),
    traffic(
        "traffic-export-fifo", "--export {d}/x.csv", 2, r"x\.csv is not a regular file", files_extra={"x.csv": FIFO}
    ),
    traffic(
        "traffic-span-30y", "", 2, r"bins.*more than", data=sample_file(records=2, step_ns=30 * 365 * 86400 * 10**9)
    ),
    traffic("traffic-span-1h-01ms", "--intervals 0.1ms", 2, r"more than", data=sample_file(3, step_ns=1800 * 10**9)),
    traffic("traffic-window-tiny", "--window 0:0.0000000001", 2, r"narrower than a nanosecond"),
    traffic("traffic-window-after", "--window 100:200", 2, r"after the samples end"),
    # every unexpected shape of a sample file is the bad-input code naming it
    traffic(
        "samples-rx-only",
        "",
        2,
        r"no tx counters.*--direction",
        data=samples_of(header(counters=[{"path": "/c0", "device": "d", "direction": "rx", "unit": 4}]), ticks()),
    ),
    traffic("samples-anchor-int", "", 2, r"s\.bin: the header's anchor", data=samples_of(header(anchor=5), ticks())),
    traffic("samples-anchor-text", "", 2, r"anchor", data=samples_of(header(anchor={"wall_ns": "x"}), ticks())),
    traffic(
        "samples-unit-huge",
        "",
        2,
        r"s\.bin: .*unit 1-",
        data=samples_of(header(counters=[{"path": "/c0", "device": "d", "direction": "tx", "unit": 10**30}]), []),
    ),
    traffic(
        "samples-header-deep",
        "",
        2,
        r"s\.bin: the header is not JSON",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 200_000) + b"[" * 100_000 + b"]" * 100_000,
    ),
    traffic(
        "samples-bracket-reversed",
        "",
        2,
        r"s\.bin: record 0: its read ends",
        data=samples_of(header(), [(t1 + 5000, t1, m, p, v) for t1, _, m, p, v in ticks()]),
    ),
    traffic(
        "samples-one-instant",
        "",
        2,
        r"s\.bin: record 1 is not later",
        data=samples_of(header(), [(1000, 2000, 0, 0, k) for k in range(50)]),
    ),
    traffic("export-upper-case", "--export {d}/x.CSV", 0, r"", outputs=("x.CSV",)),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
