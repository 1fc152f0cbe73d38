"""The engine seam: every serving engine sparkfab can launch, by the name recipes use.

Adding one is a module here (a subclass of `Engine` with its argv, flags and probes), its entry
in `ENGINES`, and recipes in `launchers/`; docs/explanation/architecture.md walks it.
"""

from __future__ import annotations

from sparkfab.engines import collective, sglang, vllm
from sparkfab.engines.base import Engine, LabServing, Metrics, Oracle, RankArgs, flag_argv

ENGINES: dict[str, Engine] = {e.name: e for e in (vllm.ENGINE, sglang.ENGINE, collective.ENGINE)}


def engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"engine {name!r} is not one sparkfab launches ({', '.join(ENGINES)})") from None


def served() -> list[Engine]:
    """The engines that serve an OpenAI-compatible API (the ones bench can read)."""
    return [e for e in ENGINES.values() if e.metrics is not None]


def in_lab() -> list[Engine]:
    """The engines the lab can serve (`lab up --engine`), the default first."""
    return [e for e in ENGINES.values() if e.lab is not None]


__all__ = [
    "ENGINES",
    "Engine",
    "LabServing",
    "Metrics",
    "Oracle",
    "RankArgs",
    "engine",
    "flag_argv",
    "in_lab",
    "served",
]
