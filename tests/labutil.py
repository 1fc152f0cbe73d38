"""Helpers for lab tests: run the CLI in-process, and make sure labs are torn down."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from tests.conftest import REPO


@dataclass
class Res:
    code: int
    out: str
    err: str


def sparkfab(*args: str) -> Res:
    from sparkfab.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(cwd)
    return Res(code, out.getvalue(), err.getvalue())


def lab_ready() -> str | None:
    """Why lab tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces)"
    for tool in ("sshd", "netplan", "lldpd", "nft", "ip"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is missing: run scripts/setup.sh as root"
    return None


requires_lab = pytest.mark.skipif(lab_ready() is not None, reason=lab_ready() or "")


def ssh(cluster: str, host: str, command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`command` as root on a lab Spark (through sudo: one Spark of each lab logs in as a user)."""
    import shlex

    from sparkfab.paths import lab_dir

    return subprocess.run(
        ["ssh", "-F", str(lab_dir(cluster) / "ssh_config"), host, f"sudo -n sh -c {shlex.quote(command)}"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def lab(inventory: str, cluster: str, engine: str = "collective"):
    """A lab for the block; it serves the collective workload (seconds to start) unless
    `engine="vllm"` asks for the real one."""
    from sparkfab.lab import build

    build.down(cluster)
    res = sparkfab("lab", "up", inventory, "--engine", engine)
    assert res.code == 0, res.err
    try:
        yield res
    finally:
        build.down(cluster)
