"""One line per check per host/port, with expected and actual values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASS, FAIL, SKIP = "pass", "fail", "skip"
#: preflight only: not a blocker, but worth knowing
WARN = "warn"


@dataclass(frozen=True)
class Result:
    check: str
    host: str
    subject: str
    expected: str
    actual: str
    status: str
    detail: str = ""

    @classmethod
    def compare(cls, check: str, host: str, subject: str, expected: Any, actual: Any, detail: str = "") -> Result:
        return cls(check, host, subject, str(expected), str(actual), PASS if expected == actual else FAIL, detail)

    @classmethod
    def skip(cls, check: str, host: str, subject: str, reason: str) -> Result:
        return cls(check, host, subject, "-", "-", SKIP, reason)


@dataclass
class Report:
    cluster: str
    link_speed: str
    results: list[Result] = field(default_factory=list)
    collective: dict[str, Any] | None = None
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
            "collective": self.collective,
            "timing": self.timing,
        }
