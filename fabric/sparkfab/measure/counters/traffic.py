"""Turn counter samples into rates over any averaging interval.

Each sample interval's bytes are spread over the bins it overlaps, in proportion to the
overlap (a constant rate inside one interval); integer apportionment (largest remainder)
keeps the bytes exact: the bins add up to the counters' total, to the byte. Sample times
are the midpoints of their read brackets; the bracket widths give each figure's timing
uncertainty. Counter resets (the value falls) and 64-bit wraps are handled and counted.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from sparkfab.errors import UsageError
from sparkfab.measure.counters.sampler import Samples

WRAP = 1 << 64


@dataclass
class Series:
    """Per direction: sample midpoints (ns, monotonic) and bytes moved in each interval."""

    times_ns: list[int]
    brackets_ns: list[int]
    deltas: dict[str, list[int]]  # direction -> bytes in (t[i-1], t[i]]
    resets: int = 0
    wraps: int = 0
    missed: int = 0
    anchor: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> dict[str, int]:
        return {d: sum(v) for d, v in self.deltas.items()}

    def of(self, direction: str) -> list[int]:
        """The bytes per interval in one direction; a file without its counters says so."""
        if direction not in self.deltas:
            has = " and ".join(sorted(self.deltas)) or "no"
            raise UsageError(f"the samples hold no {direction} counters (they hold {has}): choose --direction")
        return self.deltas[direction]

    def wall_ns(self, mono_ns: int) -> int:
        return self.anchor.get("wall_ns", 0) + mono_ns - self.anchor.get("mono_ns", 0)


def counter_delta(old: int, new: int) -> tuple[int, str]:
    """Bytes between two raw readings: 'ok', 'wrap' (64-bit overflow) or 'reset' (restart at 0)."""
    if new >= old:
        return new - old, "ok"
    if old > (1 << 63):
        return new + WRAP - old, "wrap"
    return new, "reset"


def series(s: Samples, device: str | None = None) -> Series:
    """The samples' bytes per interval, of every counter or of one device's."""
    counters = s.counters
    dirs = sorted({c["direction"] for c in counters})
    out = Series(
        [(a + b) // 2 for a, b in zip(s.t0, s.t1, strict=True)],
        [b - a for a, b in zip(s.t0, s.t1, strict=True)],
        {d: [] for d in dirs},
        missed=sum(s.missed),
        anchor=dict(s.header.get("anchor", {})),
    )
    for i in range(1, len(s.values)):
        per_dir = dict.fromkeys(dirs, 0)
        for j, c in enumerate(counters):
            if device is not None and c["device"] != device:
                continue
            delta, kind = counter_delta(s.values[i - 1][j], s.values[i][j])
            out.resets += kind == "reset"
            out.wraps += kind == "wrap"
            per_dir[c["direction"]] += delta * int(c["unit"])
        for d in dirs:
            out.deltas[d].append(per_dir[d])
    return out


#: bins one rate series may have: 10 minutes at 0.1 ms, about 100 MB of Python floats
MAX_BINS = 6_000_000


def spread(times_ns: list[int], deltas: list[int], start_ns: int, width_ns: int, nbins: int) -> list[int]:
    """Distribute each interval's bytes over the bins [start + k*width, ...) it overlaps."""
    bins = [0] * nbins
    for i, nbytes in enumerate(deltas):
        a, b = times_ns[i], times_ns[i + 1]
        if nbytes == 0 or b <= a:
            if nbytes and 0 <= (b - start_ns) // width_ns < nbins:
                bins[(b - start_ns) // width_ns] += nbytes
            continue
        first, last = max(0, (a - start_ns) // width_ns), min(nbins - 1, (b - 1 - start_ns) // width_ns)
        shares = []
        for k in range(first, last + 1):
            lo, hi = max(a, start_ns + k * width_ns), min(b, start_ns + (k + 1) * width_ns)
            if hi > lo:
                shares.append((k, nbytes * (hi - lo) / (b - a)))
        _apportion(bins, shares, nbytes)
    return bins


def _apportion(bins: list[int], shares: list[tuple[int, float]], total: int) -> None:
    """Largest remainder: integer parts that add up exactly to the interval's bytes."""
    if not shares:
        return
    floors = [(k, int(v), v - int(v)) for k, v in shares]
    left = total - sum(f for _, f, _ in floors)
    for rank, (k, f, _) in enumerate(sorted(floors, key=lambda x: -x[2])):
        bins[k] += f + (1 if rank < left else 0)


def rates(
    sr: Series, width_s: float, direction: str = "tx", window: tuple[float, float] | None = None
) -> tuple[list[float], list[float]]:
    """(bin start times in s from the first sample, Gb/s per bin)."""
    t = sr.times_ns
    if len(t) < 2:
        return [], []
    origin = t[0]
    lo = origin + int((window[0] if window else 0) * 1e9)
    hi = origin + int(window[1] * 1e9) if window else t[-1]
    width = max(1, int(width_s * 1e9))
    n = max(1, -(-(hi - lo) // width))
    if n > MAX_BINS:
        raise UsageError(
            f"{(hi - lo) / 1e9:g} s in bins of {width_s:g} s is {n:,} bins, more than {MAX_BINS:,}: "
            "choose a longer interval or a --window"
        )
    bins = spread(t, sr.of(direction), lo, width, n)
    return [(lo - origin + k * width) / 1e9 for k in range(n)], [b * 8 / width_s / 1e9 for b in bins]


@dataclass(frozen=True)
class Peak:
    """The highest rate averaged over `interval_s`, and how much the sample timing can move it."""

    interval_s: float
    peak_gbps: float
    uncertainty: float  # a fraction: the median read bracket, twice, over the interval
    whole_window: bool = False  # the average over the whole window (the last row)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.whole_window:
            del d["whole_window"]
        return d


def peaks(
    sr: Series, intervals: list[float], direction: str = "tx", window: tuple[float, float] | None = None
) -> list[Peak]:
    """Highest value per averaging interval, as in the paper's Section 8.1 table."""
    brackets = sorted(sr.brackets_ns) or [0]
    median = brackets[len(brackets) // 2]
    rows = []
    total_bytes, span = window_bytes(sr, direction, window)
    for width in intervals:
        if width > span:  # a bin longer than the window would not be an average over it
            continue
        _, r = rates(sr, width, direction, window)
        rows.append(Peak(width, max(r, default=0.0), min(1.0, 2 * median / (width * 1e9))))
    rows.append(
        Peak(
            span,
            total_bytes * 8 / span / 1e9 if span else 0.0,
            2 * median / (span * 1e9) if span else 0.0,
            whole_window=True,
        )
    )
    return rows


def window_bytes(sr: Series, direction: str, window: tuple[float, float] | None) -> tuple[int, float]:
    t = sr.times_ns
    if len(t) < 2:
        return 0, 0.0
    if window is None:
        return sum(sr.of(direction)), (t[-1] - t[0]) / 1e9
    width = int((window[1] - window[0]) * 1e9)
    if width < 1:
        raise UsageError(f"--window {window[0]:g}:{window[1]:g} is narrower than a nanosecond")
    lo = t[0] + int(window[0] * 1e9)
    if lo >= t[-1]:
        raise UsageError(f"--window starts at {window[0]:g} s, after the samples end ({(t[-1] - t[0]) / 1e9:g} s)")
    return spread(t, sr.of(direction), lo, width, 1)[0], window[1] - window[0]


@dataclass(frozen=True)
class SampleSummary:
    """What a sample file holds and how well it was sampled."""

    samples: int
    duration_s: float
    bytes: dict[str, int]  # per direction (tx, rx)
    resets: int
    wraps: int
    missed_deadlines: int
    bracket_us: dict[str, float]  # how long one read of every counter took: p50, p99, max
    gap_ms: dict[str, float]  # between consecutive samples: median, max


def summary(sr: Series) -> SampleSummary:
    br = sorted(sr.brackets_ns)
    gaps = [b - a for a, b in zip(sr.times_ns, sr.times_ns[1:], strict=False)]

    def pct(xs: list[int], q: float) -> int:
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0

    return SampleSummary(
        samples=len(sr.times_ns),
        duration_s=(sr.times_ns[-1] - sr.times_ns[0]) / 1e9 if sr.times_ns else 0,
        bytes=sr.total,
        resets=sr.resets,
        wraps=sr.wraps,
        missed_deadlines=sr.missed,
        bracket_us={"p50": pct(br, 0.5) / 1e3, "p99": pct(br, 0.99) / 1e3, "max": (br[-1] / 1e3) if br else 0},
        gap_ms={"median": statistics.median(gaps) / 1e6 if gaps else 0, "max": max(gaps, default=0) / 1e6},
    )


def export_rows(
    sr: Series, width_s: float, window: tuple[float, float] | None = None
) -> list[tuple[float, int, float, float]]:
    """(s from the first sample, wall-clock ms of the bin start, tx Gb/s, rx Gb/s) per bin."""
    t, tx = rates(sr, width_s, "tx", window)
    _, rx = rates(sr, width_s, "rx", window)
    origin = sr.times_ns[0] if sr.times_ns else 0
    return [(a, sr.wall_ns(origin + int(a * 1e9)) // 1_000_000, b, c) for a, b, c in zip(t, tx, rx, strict=True)]


#: the CSV export's first line: its column names (tools take the first line as the header)
CSV_HEADER = "t_s,wall_ms,tx_gbps,rx_gbps"


def to_csv(rows: list[tuple[float, int, float, float]]) -> str:
    """One line per bin: its start in s from the first sample, its wall-clock start in ms, Gb/s."""
    return CSV_HEADER + "\n" + "".join(f"{a:.6f},{w},{b:.6f},{c:.6f}\n" for a, w, b, c in rows)


#: the OpenMetrics export's metric (base units: a rate in bits per second)
METRIC = "sparkfab_link_rate_bits_per_second"


def to_openmetrics(
    per_device: dict[str, list[tuple[float, int, float, float]]], width_s: float, labels: dict[str, str]
) -> str:
    """OpenMetrics text, as Prometheus's tools ingest it (`promtool tsdb create-blocks-from
    openmetrics`): one gauge, a series per device and direction with all its samples together,
    timestamps in seconds, `# EOF` at the end; prometheus_client writes it (and escapes labels)."""
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.openmetrics.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    names = ["device", "direction", "interval_s", *sorted(labels)]
    family = GaugeMetricFamily(
        METRIC,
        "Bytes moved per bin as a rate, from the RDMA or netdev counters sparkfab sampled.",
        labels=names,
    )
    for device in sorted(per_device):
        for col, direction in ((2, "tx"), (3, "rx")):
            values = [device, direction, f"{width_s:g}", *(str(labels[k]) for k in sorted(labels))]
            for row in per_device[device]:
                family.add_metric(values, row[col] * 1e9, timestamp=row[1] / 1e3)

    class _Once:
        def collect(self) -> list[GaugeMetricFamily]:
            return [family]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once())
    text: bytes = generate_latest(registry)  # type: ignore[no-untyped-call]
    return text.decode()
