"""Helpers for lab tests: whether a lab can run here, a lab for a block, a command on a Spark."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess

import pytest

from tests.helpers.cli import run as sparkfab

__all__ = ["lab", "lab_ready", "requires_lab", "sparkfab", "ssh"]


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
