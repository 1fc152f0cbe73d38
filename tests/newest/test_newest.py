"""The newest versions pyproject.toml's ranges allow, tried beside the lock without touching it:
sparkfab's environment made anew in a temporary folder from a lock compiled with `--upgrade`, and
the default tier (unit and golden tests) run in it. What differs from requirements/sparkfab.txt is
printed, so a failure names the packages that moved. Not part of CI's gate: drift is found here on
a day we choose, and scripts/newest.sh then updates the lock in one commit."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

UV = Path(sys.executable).with_name("uv")
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)", re.M)


def _pins(text: str) -> dict[str, str]:
    return {name.lower(): version for name, version in PIN.findall(text)}


def _uv(*args: str, env: dict[str, str]) -> None:
    subprocess.run([str(UV), *args], check=True, env=env, cwd=REPO)


def _setup_env() -> dict[str, str]:
    """The environment setup installs with: uv told of the machine's indexes, local wheels and
    constraints (scripts/pythonenv.sh's uv_settings), as the lock was made."""
    out = subprocess.run(
        ["bash", "-c", ". scripts/pythonenv.sh && uv_settings && env -0"], cwd=REPO, check=True, capture_output=True
    ).stdout.decode()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def test_the_default_tier_passes_on_the_newest_versions_the_ranges_allow(tmp_path: Path):
    env = _setup_env()
    lock = tmp_path / "newest.txt"
    inputs = REPO / "requirements" / "sparkfab.in"
    _uv(
        "pip",
        "compile",
        "--quiet",
        "--upgrade",
        "--generate-hashes",
        "--python",
        sys.executable,
        "--extra",
        "dev",
        "--extra",
        "plots",
        "--extra",
        "lab",
        "-o",
        str(lock),
        "pyproject.toml",
        str(inputs),
        env=env,
    )
    locked, newest = _pins((REPO / "requirements" / "sparkfab.txt").read_text()), _pins(lock.read_text())
    moved = {n: f"{locked.get(n, '-')} -> {v}" for n, v in sorted(newest.items()) if locked.get(n) != v}
    print("newer than the lock:", moved or "nothing")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    sync_env = {k: v for k, v in env.items() if k != "UV_CONSTRAINT"}
    _uv("pip", "sync", "--python", str(venv / "bin" / "python"), "--require-hashes", str(lock), env=sync_env)
    _uv("pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps", "-e", ".", env=sync_env)
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"],
        cwd=REPO,
        env={**env, "PATH": f"{venv / 'bin'}:{env['PATH']}"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"moved: {moved}\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
