"""Other packages' Python warnings are not sparkfab's output: told apart from Ansible's own lines
on a real program's stderr, and kept off the terminal unless -v."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab import others
from tests.conftest import REPO

CAPTURED = REPO / "tests" / "data" / "captured" / "ansible-doc_cryptography-51.0.1.stderr"


def test_a_real_warning_of_another_package_is_not_an_own_line():
    text = CAPTURED.read_text()
    assert "CryptographyDeprecationWarning" in text
    assert others.own_lines(text) == []


def test_ansibles_own_lines_and_sparkfabs_stay():
    text = (
        CAPTURED.read_text()
        + "[WARNING]: Skipping unexpected key (extra) in group_vars\n"
        + "  indented, but after an own line\n"
        + "x.py:3: UserWarning: a second one\n  source()\n"
        + "ERROR! the inventory could not be read\n"
    )
    assert others.own_lines(text) == [
        "[WARNING]: Skipping unexpected key (extra) in group_vars",
        "  indented, but after an own line",
        "ERROR! the inventory could not be read",
    ]


def _validate(*extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    ini = REPO / "tests" / "data" / "split" / "ring4-ini" / "hosts.ini"
    return subprocess.run(
        [sys.executable, "-m", "sparkfab", "validate", *extra, str(ini)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


@pytest.fixture
def warning_env(tmp_path: Path) -> dict[str, str]:
    """An environment in which every Python that starts, sparkfab's and Ansible's reader alike,
    imports a package that warns on import (as ansible-core 2.19 does beside cryptography 51,
    whatever versions this machine has): a sitecustomize of another package's."""
    (tmp_path / "sitecustomize.py").write_text(
        "import warnings\n"
        "import importlib.abc, sys\n"
        "class _Warner(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ansible':\n"
        "            warnings.warn('DSA is deprecated (stand-in)', DeprecationWarning, stacklevel=2)\n"
        "            warnings.warn('another package says so', UserWarning, stacklevel=2)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Warner())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != others.ENV}
    env["PYTHONPATH"] = f"{tmp_path}:{REPO / 'fabric'}"
    return env


def test_validate_of_an_ini_inventory_prints_only_its_own_lines(warning_env: dict[str, str]):
    quiet = _validate(env=warning_env)
    assert quiet.returncode == 0, quiet.stderr
    assert "Warning" not in quiet.stderr, quiet.stderr
    asked = _validate("-v", env=warning_env)  # the same run with -v: the warnings are there to hide
    assert asked.returncode == 0 and "another package says so" in asked.stderr, asked.stderr
