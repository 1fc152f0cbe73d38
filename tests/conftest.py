from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "inventory").glob("*.yml"))
REGEN = os.environ.get("SPARKFAB_REGEN") == "1"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run `sparkfab ARGS` in-process from the repository root."""
    from sparkfab.cli import main

    monkeypatch.chdir(REPO)

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run


def pytest_configure(config: pytest.Config) -> None:
    sys.path.insert(0, str(REPO / "fabric"))
