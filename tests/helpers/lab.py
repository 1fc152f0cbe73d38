"""Helpers for lab tests: whether a lab can run here, a lab for a block, a command on a Spark."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.helpers.cli import run as sparkfab

__all__ = [
    "holding",
    "in_machine",
    "lab",
    "lab_ready",
    "machine_init",
    "mgmt_ip",
    "requires_lab",
    "silence_sshd",
    "sparkfab",
    "ssh",
    "started",
]


def lab_ready() -> str | None:
    """Why lab tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces)"
    for tool in ("systemd-nspawn", "mmdebstrap", "lldpd", "ip", "nsenter", "ssh"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is missing: run scripts/setup.sh as root"
    return None


requires_lab = pytest.mark.skipif(lab_ready() is not None, reason=lab_ready() or "")


def ssh(cluster: str, host: str, command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`command` as root on a lab Spark: through sudo with the login's password where the Spark
    is reached as its owner (a lab's last Spark, as a Spark's owner logs in), handed over on
    stdin, as sparkfab's checks do."""
    import shlex

    from sparkfab.lab.image import LOGIN, LOGIN_PASSWORD
    from sparkfab.lab.login import login_of
    from sparkfab.lab.state import LabState
    from sparkfab.paths import lab_dir

    spec = LabState.read(lab_dir(cluster)).spec
    owner = next((login_of(spec, n) == LOGIN for n in spec.sparks if n.name == host), False)
    become = "sudo -S -p '' sh -c" if owner else "sudo -n sh -c"
    return subprocess.run(
        ["ssh", "-F", str(lab_dir(cluster) / "ssh_config"), host, f"{become} {shlex.quote(command)}"],
        input=f"{LOGIN_PASSWORD}\n" if owner else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def started(*args: str) -> subprocess.Popen[str]:
    """`sparkfab ARGS` as a process of its own (to signal it, or to act while it runs), its
    output piped."""
    from tests.conftest import REPO

    return subprocess.Popen(
        [str(REPO / ".venv/bin/sparkfab"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _machine(cluster: str, host: str):
    from sparkfab.lab import machine
    from sparkfab.lab.state import LabState
    from sparkfab.paths import lab_dir

    return next(m for m in machine.machines(LabState.read(lab_dir(cluster)).spec) if m.node.name == host)


def machine_init(cluster: str, host: str) -> int:
    """A lab Spark's PID 1 as this machine sees it."""
    from sparkfab.lab import machine

    pid = machine.init_pid(_machine(cluster, host))
    assert pid is not None, f"{host} of {cluster} is not running"
    return pid


def in_machine(cluster: str, host: str, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` inside a lab Spark as its own init sees it (not over ssh)."""
    from sparkfab.lab import machine

    return machine.run(_machine(cluster, host), *command)


def silence_sshd(cluster: str, host: str) -> None:
    """A Spark that no longer answers ssh (its sshd stopped, the machine still up)."""
    res = in_machine(cluster, host, "systemctl", "stop", "ssh.socket", "ssh.service")
    assert res.returncode == 0, res.stderr


def mgmt_ip(cluster: str, host: str) -> str:
    return str(_machine(cluster, host).node.mgmt_ip)


#: the clusters the running lab test declares with its `xdist_group` mark (tests/lab/conftest.py
#: sets it; None outside the lab tier): the lab tier runs on two pytest-xdist workers grouped by
#: that mark, so a test that boots a lab it did not declare could meet a lab of the same name
declared: frozenset[str] | None = None


@contextlib.contextmanager
def holding(cluster: str):
    """Hold this machine's lock on the cluster's name for the block: a lab is found and torn
    down by its name, so a second test process (another worker, another run) waits here instead
    of tearing down a lab it did not create."""
    folder = Path("/run/lock") if os.access("/run/lock", os.W_OK) else Path(tempfile.gettempdir())
    with open(folder / f"sparkfab-test-lab-{cluster}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def lab(inventory: str, cluster: str, engine: str = "collective", *extra: str):
    """A lab for the block; it serves the collective workload (seconds to start) unless
    `engine="vllm"` asks for the real one; `extra`: more of `lab up`'s options."""
    from sparkfab.lab import build

    assert declared is None or cluster in declared, (
        f"this test boots lab {cluster!r} but its xdist_group mark says {sorted(declared)}: "
        "mark it with pytest.mark.xdist_group(<cluster>) so that no other worker boots that name beside it"
    )
    with holding(cluster):
        build.down(cluster)
        res = sparkfab("lab", "up", inventory, "--engine", engine, *extra)
        assert res.code == 0, res.err
        try:
            yield res
        finally:
            build.down(cluster)


def become_password_file(folder: Path) -> Path:
    """A file holding the lab login's password, as `--become-password-file` takes it (the last
    Spark of a lab logs in as the non-root login, whose sudo asks for it)."""
    from sparkfab.lab.image import LOGIN_PASSWORD

    secret = folder / "become-pass"
    secret.write_text(LOGIN_PASSWORD + "\n")
    secret.chmod(0o600)
    return secret
