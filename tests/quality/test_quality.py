"""The house style, checked: ruff, mypy --strict on the package, ansible-lint on a rendered tree
(the content, as the collection it is installed as: tests/slow/test_collection.py)."""

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


def test_a_rendered_tree_passes_ansible_lints_production_profile(tmp_path):
    """What a site keeps in its own repository (the rendered inventory and host_vars) meets the
    profile a site's CI would hold it to; a ring and a switched cluster."""
    for inventory in ("ring4.yml", "switch8-crs804-200.yml"):
        tree = tmp_path / inventory.removesuffix(".yml")
        res = _run(str(BIN / "sparkfab"), "render", f"inventory/{inventory}", "-o", str(tree))
        assert res.returncode == 0, res.stderr
        lint = subprocess.run(
            [_tool("ansible-lint"), "--nocolor", "--profile", "production", "inventory.yml", "host_vars"],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
        )
        assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]
