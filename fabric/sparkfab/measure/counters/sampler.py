"""Sample traffic counters at 1 ms and stream them to disk (Appendix A of the paper).

RDMA traffic bypasses the kernel, so it only shows in the RDMA port counters
(/sys/class/infiniband/<dev>/ports/1/counters/port_{xmit,rcv}_data, in units of 4 bytes);
netdev counters (/sys/class/net/<if>/statistics/{tx,rx}_bytes) see TCP and the lab.

Every read of all counters is bracketed by two CLOCK_MONOTONIC timestamps. The file holds a
JSON header (sources, units, a wall-clock anchor: one time.time_ns() taken together with
monotonic_ns()) and fixed-size binary records written with one write() each, so a killed
sampler loses at most the record being written. Missed deadlines are counted in each
record, never hidden.

Record: int64 t0_ns, int64 t1_ns, uint32 missed_before, uint32 pad, uint64 counter[n].

The read loop runs in C (`sparkfab.measure.counters._sampleloop`, built at install when a compiler is there) in
slices of 20 ms with the GIL released; between slices Python checks stop() and signals. A pure
Python loop with the same contract is the fallback (`SampleStats.impl` says which ran).
"""

from __future__ import annotations

import array
import gc
import json
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkfab.errors import UsageError
from sparkfab.facts import rdma
from sparkfab.files import userfile

MAGIC = b"SPARKFAB-SAMPLES v1\n"
SLICE_NS = 20_000_000  # how long the loop runs between looks at stop() and signals

try:
    from sparkfab.measure.counters import _sampleloop

    _c_run: Callable[..., tuple[int, int, int, int, int, int, bytes]] | None = _sampleloop.run
except ImportError:  # no compiler at install time
    _c_run = None


@dataclass(frozen=True)
class CounterFile:
    path: str  # absolute path of the counter file
    device: str
    direction: str  # tx | rx
    unit: int  # bytes per count


@dataclass(frozen=True)
class Source:
    """Where a source's counters are: each device's counter folder (under sysfs), the transmit
    and receive files in it, and the bytes one count stands for."""

    devices: str  # the sysfs folder of its devices
    folder: str  # a device's counters, inside its own folder
    tx: str
    rx: str
    unit: int


#: the counters sparkfab samples, by source: the RDMA port's (what RoCE moves: NCCL's data, in
#: 4-byte words; the port's folder as `facts.rdma` names it) and the netdev's (TCP and the lab)
SOURCES = {
    "rdma": Source(rdma.DEVICES, f"{rdma.PORT}/counters", "port_xmit_data", "port_rcv_data", 4),
    "netdev": Source("/sys/class/net", "statistics", "tx_bytes", "rx_bytes", 1),
}


def counter_files(devices: list[str], source: str, root: str = "/") -> list[CounterFile]:
    """Each device's transmit and receive counters of `source` (under `root`: a test's tree)."""
    src = SOURCES[source]
    out = []
    for d in devices:
        folder = Path(root) / src.devices.lstrip("/") / d / src.folder
        out += [
            CounterFile(str(folder / src.tx), d, "tx", src.unit),
            CounterFile(str(folder / src.rx), d, "rx", src.unit),
        ]
    return out


def counters_of(devices: list[str], source: str, root: str = "/") -> list[CounterFile]:
    """The counters of these devices; a device without them is a usage error that names it."""
    counters = counter_files(devices, source, root)
    missing = sorted({c.device for c in counters if not Path(c.path).is_file()})
    if missing:
        where = SOURCES[source].devices
        raise UsageError(f"no {source} counters for {', '.join(missing)} under {Path(root) / where.lstrip('/')}")
    bad = [f"{c.path} holds {text[:20]!r}" for c in counters if not (text := _peek(c.path)).isdigit()]
    if bad:
        raise UsageError(f"not a counter (a whole number of bytes or words): {'; '.join(bad[:4])}")
    return counters


def _peek(path: str) -> str:
    """A counter file's text as the read loops see it (their first 32 bytes), stripped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
        finally:
            os.close(fd)
    except OSError as exc:
        return f"<{exc.strerror}>"


def record_struct(n: int) -> struct.Struct:
    return struct.Struct(f"<qqII{n}Q")


@dataclass
class SampleStats:
    samples: int = 0
    missed: int = 0
    max_gap_ns: int = 0
    brackets_ns: array.array = field(default_factory=lambda: array.array("q"))  # type: ignore[type-arg]
    realtime: bool = False
    impl: str = "python"  # which read loop ran: "c" or "python"


def _tighten_timing() -> bool:
    """Minimal timer slack, and SCHED_FIFO when allowed (root): wake-ups on time."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK = 1 ns
    except (OSError, AttributeError):
        pass
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return True
    except (PermissionError, OSError, AttributeError):
        return False


def _relax_timing(realtime: bool) -> None:
    if realtime:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _py_run(
    fds: list[int], out_fd: int, step: int, deadline: int, until: int, missed: int, prev_t0: int
) -> tuple[int, int, int, int, int, int, bytes]:
    """The read loop in Python, with the C loop's contract (see _sampleloop.c)."""
    rec = record_struct(len(fds))
    write, pack, mono, pread, sleep = os.write, rec.pack, time.monotonic_ns, os.pread, time.sleep
    brackets = array.array("q")
    samples = missed_total = max_gap = 0
    while True:
        now = mono()
        if deadline > now:
            sleep((deadline - now) / 1e9)
        t0 = mono()
        raw = [pread(f, 32, 0) for f in fds]
        t1 = mono()
        write(out_fd, pack(t0, t1, missed, 0, *map(int, raw)))
        brackets.append(t1 - t0)
        samples += 1
        if prev_t0 and t0 - prev_t0 > max_gap:
            max_gap = t0 - prev_t0
        prev_t0 = t0
        deadline += step
        now = mono()
        if now > deadline:  # late: skip the ticks we cannot make, and say so
            missed = (now - deadline) // step + 1
            missed_total += missed
            deadline += missed * step
        else:
            missed = 0
        if deadline > until:
            return deadline, missed, prev_t0, samples, missed_total, max_gap, brackets.tobytes()


def sample(
    counters: list[CounterFile],
    out: Path,
    interval_s: float = 0.001,
    duration_s: float | None = None,
    stop: Callable[[], bool] | None = None,
    meta: dict[str, Any] | None = None,
    realtime: bool = True,
    impl: str | None = None,
    slice_s: float = SLICE_NS / 1e9,
) -> SampleStats:
    """Read every counter each interval until duration, stop() or SIGTERM/SIGINT.

    stop() is consulted every slice_s (0: before every sample); impl: "c" or "python" chooses
    the read loop, by default the C one when it was built."""
    if impl == "c" and _c_run is None:
        raise RuntimeError("the C read loop (sparkfab.measure.counters._sampleloop) was not built")
    run = _c_run if impl != "python" and _c_run is not None else _py_run
    fds = [os.open(c.path, os.O_RDONLY) for c in counters]
    header = {
        "version": 1,
        "interval_s": interval_s,
        "counters": [c.__dict__ for c in counters],
        "anchor": {"wall_ns": time.time_ns(), "mono_ns": time.monotonic_ns()},
        # what the exports label the samples with, whoever sampled (sample, bench)
        "source": source_of([c.__dict__ for c in counters]),
        "host": socket.gethostname(),
        **{k: v for k, v in (meta or {}).items() if v is not None},
    }
    blob = json.dumps(header).encode()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, MAGIC + struct.pack("<I", len(blob)) + blob)
    stopping = {"now": False}
    main = threading.current_thread() is threading.main_thread()  # only it may take signals
    old = (
        {s: signal.signal(s, lambda *_: stopping.update(now=True)) for s in (signal.SIGTERM, signal.SIGINT)}
        if main
        else {}
    )
    stats = SampleStats(impl="c" if run is _c_run else "python")
    step = int(interval_s * 1e9)
    gc_was = gc.isenabled()
    gc.disable()  # a collection pause would show up as a gap
    stats.realtime = _tighten_timing() if realtime else False
    try:
        start = time.monotonic_ns()
        end = start + int(duration_s * 1e9) if duration_s else 1 << 62
        deadline, missed, prev_t0 = start, 0, 0
        while deadline <= end and not stopping["now"] and not (stop and stop()):
            until = min(end, deadline + int(slice_s * 1e9))
            deadline, missed, prev_t0, n, m, gap, brackets = run(fds, fd, step, deadline, until, missed, prev_t0)
            stats.samples += n
            stats.missed += m
            stats.max_gap_ns = max(stats.max_gap_ns, gap)
            stats.brackets_ns.frombytes(brackets)
    finally:
        _relax_timing(stats.realtime)
        if gc_was:
            gc.enable()
        for s, h in old.items():
            signal.signal(s, h)
        os.close(fd)
        for f in fds:
            os.close(f)
    return stats


@dataclass
class Samples:
    header: dict[str, Any]
    t0: list[int]
    t1: list[int]
    missed: list[int]
    values: list[list[int]]  # per record, raw counter values

    @property
    def counters(self) -> list[dict[str, Any]]:
        return list(self.header["counters"])

    @property
    def source(self) -> str:
        """rdma or netdev: what the header says, else what the counters' paths are (files
        written before the header said it)."""
        said = self.header.get("source")
        return str(said) if said else source_of(self.counters)

    @property
    def host(self) -> str:
        """The host whose counters these are ('' in files written before the header said it)."""
        return str(self.header.get("host") or "")


def source_of(counters: list[dict[str, Any]]) -> str:
    """rdma when the counters are the RDMA ports' (under class/infiniband), else netdev."""
    return "rdma" if counters and all("/infiniband/" in str(c.get("path", "")) for c in counters) else "netdev"


MAX_HEADER = 1 << 20
#: bytes per counter unit (RDMA data counters count 4-byte words, netdev counters bytes)
MAX_UNIT = 1 << 20
#: an hour at 1 ms of eight counters is about 250 MB; a file beyond this is not one sparkfab wrote
MAX_SAMPLE_BYTES = 2 << 30


def read(path: str | Path) -> Samples:
    """Read a sample file; a torn last record (killed writer) is dropped. A file that is not
    one raises UsageError naming it."""
    data = userfile.read_bytes(path, "sample file", MAX_SAMPLE_BYTES)
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise UsageError(f"{path}: not a sparkfab sample file")
    off = len(MAGIC)
    (n,) = struct.unpack_from("<I", data, off)
    if n > MAX_HEADER or off + 4 + n > len(data):
        raise UsageError(f"{path}: the header length ({n} bytes) does not fit the file")
    try:
        header = json.loads(data[off + 4 : off + 4 + n])
    except (ValueError, RecursionError):
        raise UsageError(f"{path}: the header is not JSON sparkfab reads") from None
    if not isinstance(header, dict):
        raise UsageError(f"{path}: the header is not a JSON object")
    _check_counters(path, header.get("counters"))
    _check_anchor(path, header.get("anchor", {}))
    off += 4 + n
    rec = record_struct(len(header["counters"]))
    count = (len(data) - off) // rec.size
    t0, t1, missed, values = [], [], [], []
    for a, b, m, _, *v in rec.iter_unpack(data[off : off + count * rec.size]):
        t0.append(a)
        t1.append(b)
        missed.append(m)
        values.append(v)
    _check_times(path, t0, t1)
    return Samples(header, t0, t1, missed, values)


def _check_anchor(path: str | Path, anchor: Any) -> None:
    ok = isinstance(anchor, dict) and all(
        isinstance(anchor.get(k, 0), int) and not isinstance(anchor.get(k, 0), bool) and 0 <= anchor.get(k, 0) < 2**63
        for k in ("wall_ns", "mono_ns")
    )
    if not ok:
        raise UsageError(f"{path}: the header's anchor is not {{wall_ns, mono_ns}} in whole nanoseconds")


def _check_times(path: str | Path, t0: list[int], t1: list[int]) -> None:
    """Each record's read bracket in order, and the records later one after another, as the
    sampler's monotonic clock writes them; anything else would divide by a span of zero or less."""
    for i, (a, b) in enumerate(zip(t0, t1, strict=True)):
        if a < 0 or b < a:
            raise UsageError(f"{path}: record {i}: its read ends ({b} ns) before it starts ({a} ns)")
        if i and a <= t0[i - 1]:
            raise UsageError(f"{path}: record {i} is not later than the one before ({a} <= {t0[i - 1]} ns)")


def _check_counters(path: str | Path, counters: Any) -> None:
    fields = {"path": str, "device": str, "direction": str, "unit": int}
    ok = (
        isinstance(counters, list)
        and 0 < len(counters) <= 4096
        and all(isinstance(c, dict) and all(isinstance(c.get(k), t) for k, t in fields.items()) for c in counters)
        and all(c["direction"] in ("tx", "rx") and 0 < c["unit"] <= MAX_UNIT for c in counters)
    )
    if not ok:
        raise UsageError(
            f"{path}: the header's counters are not a list of {{path, device, direction, unit}}"
            f" (direction tx or rx, unit 1-{MAX_UNIT} bytes)"
        )


def rate_since(counters: list[CounterFile], window_s: float) -> float:
    """Bytes per second over a short window (both directions), for idle detection."""

    def total() -> int:
        return sum(int(Path(c.path).read_text()) * c.unit for c in counters)

    a, t = total(), time.monotonic()
    time.sleep(window_s)
    return (total() - a) / (time.monotonic() - t)


def wait_idle(
    counters: list[CounterFile],
    below_bps: float,
    for_s: float,
    timeout_s: float = 600.0,
    probe_s: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Wait until the link has carried less than below_bps for for_s seconds; return the wait.
    The quiet time counts from the start of the first quiet probe (its window is quiet time
    already), so an idle link costs for_s and no probe more."""
    start = clock()
    quiet_since = None
    while clock() - start < timeout_s:
        window_from = clock()
        if rate_since(counters, min(probe_s, for_s) if for_s > 0 else probe_s) < below_bps:
            quiet_since = window_from if quiet_since is None else quiet_since
            if clock() - quiet_since >= for_s - 1e-9:
                return clock() - start
        else:
            quiet_since = None
    raise TimeoutError(f"the link did not stay below {below_bps:g} B/s for {for_s:g} s within {timeout_s:g} s")
