"""The house style, checked: ruff, mypy --strict on the package, ansible-lint on the content."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(list(argv), cwd=REPO, capture_output=True, text=True, env=env, timeout=600)


def _tool(name: str) -> str:
    exe = BIN / name
    if not exe.exists():
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return str(exe)


def test_ruff():
    res = _run(_tool("ruff"), "check", "fabric", "tests", "benchmarks", "roles", "playbooks")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict():
    res = _run(_tool("mypy"))
    assert res.returncode == 0, res.stdout + res.stderr


def test_ansible_lint():
    res = _run(_tool("ansible-lint"), "--nocolor", "playbooks", "roles")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
