from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.cli import CliResult, run

REPO = Path(__file__).resolve().parents[1]
#: vLLM's own checks of every launch take seconds to start: the tests that are about them turn
#: them on (tests/slow/test_oracle.py); everything else relies on the flag table
os.environ.setdefault("SPARKFAB_ORACLE", "off")
#: and where a test turns it on, it asks a fresh engine process unless the test is about the warm
#: server (tests/slow/test_oracle.py), which stops the server it started: no test leaves one behind
os.environ.setdefault("SPARKFAB_ORACLE_IDLE_S", "0")
#: the state of real clusters (/var/lib/sparkfab/<cluster> as root) is never the tests': every
#: verb a test runs keeps its state in a folder of this run's own, removed when it ends
if "SPARKFAB_STATE_DIR" not in os.environ:
    os.environ["SPARKFAB_STATE_DIR"] = tempfile.mkdtemp(prefix="sparkfab-test-state-")
    atexit.register(shutil.rmtree, os.environ["SPARKFAB_STATE_DIR"], True)
EXAMPLES = sorted((REPO / "inventory").glob("*.yml"))
REGEN = os.environ.get("SPARKFAB_REGEN") == "1"


@pytest.fixture(scope="session")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A collections path holding sparkfab.fabric as sparkfab's own runs lay it out."""
    from sparkfab.push import collection

    dest = tmp_path_factory.mktemp("collections")
    collection.assemble(dest)
    return dest


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """Run `sparkfab ARGS` in-process from the repository root."""
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


#: a test's tier is its folder: tests/lab, tests/slow and tests/quality carry their marker
TIERS = {"lab": "lab", "slow": "slow", "quality": "quality", "newest": "newest"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = TIERS.get(Path(str(item.path)).relative_to(REPO / "tests").parts[0])
        if tier is not None:
            item.add_marker(tier)


def start_double(*args: str) -> tuple[subprocess.Popen[str], str]:
    p = subprocess.Popen(
        [sys.executable, "-m", "tests.doubles.openai_server", *args], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
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
