"""One line per check per host/port, with expected and actual values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sparkfab.verify.catalog import Check

PASS, FAIL, SKIP = "pass", "fail", "skip"
#: preflight only: not a blocker, but worth knowing
WARN = "warn"


@dataclass(frozen=True, kw_only=True)
class Result:
    """One row of a verify or preflight report: a check (`checks.CHECKS` names each) on a host's
    subject (a port, a peer, an instance), what was expected and what was found, and its status."""

    check: str
    host: str
    subject: str
    expected: str
    actual: str
    status: str
    detail: str = ""

    @classmethod
    def compare(cls, check: str, host: str, subject: str, expected: Any, actual: Any, detail: str = "") -> Result:
        status = PASS if expected == actual else FAIL
        return cls(
            check=check,
            host=host,
            subject=subject,
            expected=str(expected),
            actual=str(actual),
            status=status,
            detail=detail,
        )

    @classmethod
    def skip(cls, check: str, host: str, subject: str, reason: str) -> Result:
        return cls(check=check, host=host, subject=subject, expected="-", actual="-", status=SKIP, detail=reason)


def left_out(instance: str, hosts: Sequence[str], only: set[str]) -> Result:
    """The row of an instance a --limit holds in part: what was not checked and why."""
    missing = ", ".join(h for h in hosts if h not in only)
    why = f"--limit leaves out {missing}: the checks across its ranks need them all"
    return Result.skip(Check.INSTANCE, hosts[0], instance, why)


@dataclass(frozen=True)
class SweepRow:
    """One size of the all-reduce sweep, in nccl-tests' terms (busbw = algbw x 2(N-1)/N)."""

    bytes: int
    time_us: float
    algbw_GBps: float
    busbw_GBps: float


@dataclass(frozen=True)
class CollectiveResult:
    """`verify --collective` on one instance: the sums on every rank, and rank 0's sweep."""

    instance: str
    backend: str
    world_size: int
    ok: bool
    ranks: dict[str, str]  # rank -> "ok", or what went wrong there
    sweep: tuple[SweepRow, ...] = ()

    @classmethod
    def from_ranks(cls, instance: str, backend: str, results: dict[int, dict[str, Any]]) -> CollectiveResult:
        """From each rank's JSON line (`assets/collective.py run`)."""
        ranks = {
            str(k): ("ok" if v.get("check", {}).get("ok") else v.get("error", "wrong sums"))
            for k, v in sorted(results.items())
        }
        rows = tuple(SweepRow(**row) for row in results.get(0, {}).get("sweep", []))
        ok = all(r.get("all_ranks_ok") for r in results.values())
        return cls(instance, backend, len(results), ok, ranks, rows)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sweep": [asdict(row) for row in self.sweep]}


@dataclass
class Report:
    """What verify or preflight found; rows are appended as the checks come back."""

    cluster: str
    link_speed: str
    results: list[Result] = field(default_factory=list)
    collective: dict[str, CollectiveResult] | None = None
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(1 for r in self.results if r.status == s) for s in (PASS, FAIL, SKIP, WARN)}
        return {
            "cluster": self.cluster,
            "link_speed": self.link_speed,
            "ok": self.ok,
            "counts": counts,
            "results": [asdict(r) for r in self.results],
            "collective": None if self.collective is None else {k: v.to_dict() for k, v in self.collective.items()},
            "timing": self.timing,
        }
