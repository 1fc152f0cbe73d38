from __future__ import annotations

import os
import signal
import subprocess
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
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refused the arguments
            code = int(exc.code or 0)
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run


@pytest.fixture(autouse=True)
def _ansible_stays_out_of_this_process():
    """sparkfab reads inventories and role modules without importing Ansible into its own
    process: Ansible patches sys.intern process-wide on import, and torch (imported later by
    the bench and serving code) refuses that patch."""
    yield
    leaked = sorted(m for m in sys.modules if m == "ansible" or m.startswith("ansible."))
    assert not leaked, f"this test imported Ansible into the test process: {leaked[:3]}"


def pytest_configure(config: pytest.Config) -> None:
    sys.path.insert(0, str(REPO / "fabric"))


def start_double(*args: str) -> tuple[subprocess.Popen[str], str]:
    p = subprocess.Popen([sys.executable, "-m", "tests.fakeserver", *args], stdout=subprocess.PIPE, text=True, cwd=REPO)
    url = p.stdout.readline().strip() if p.stdout else ""
    assert url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")), url
    return p, url


@pytest.fixture
def double(request):
    procs = []

    def make(*args: str) -> str:
        p, url = start_double(*args)
        procs.append(p)
        return url

    yield make
    for p in procs:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
