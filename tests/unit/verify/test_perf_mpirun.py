"""`verify --perf`'s nccl-tests command meets OpenMPI's own mpirun (Debian's openmpi-bin): it
starts as the login user, or as root with OpenMPI's permission, pins MPI's traffic and UCX to
the management interface, and hands every rank its own nccl.env."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sparkfab.verify.hardware import parse_nccl_tests
from sparkfab.verify.perf import all_reduce_command, as_login
from tests.helpers.inventories import plan_of

#: prints what a rank of nccl-tests would see, and a table in nccl-tests' shape from rank 0
STAND_IN = """#!/usr/bin/env python3
import json, os, sys
keys = ("OMPI_COMM_WORLD_RANK", "NCCL_IB_HCA", "UCX_NET_DEVICES", "MASTER_ADDR", "LD_LIBRARY_PATH")
print("@@" + json.dumps({**{k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:]}))
if os.environ.get("OMPI_COMM_WORLD_RANK") == "0":
    print("   1048576   262144  bfloat16  sum  -1  100.0  10.49  10.49  0  100.0  10.49  10.49  0")
    print("# Avg bus bandwidth    : 10.49")
"""


def _pair() -> Any:
    # two ranks on this machine: one address, two ssh ports (validate refuses two Sparks at one
    # address and port: one machine pushed twice)
    hosts = {
        "a": {"ansible_host": "127.0.0.1", "mgmt_if": "lo"},
        "b": {"ansible_host": "127.0.0.1", "ansible_port": 2222, "mgmt_if": "lo"},
    }
    sf = {"cluster": "mpi", "cables": [["a:p1", "b:p1"]], "instances": {"x": {"hosts": ["a", "b"], "tp": 2}}}
    return plan_of({"all": {"hosts": hosts, "vars": {"sparkfab": sf}}})


def _run(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """`command` with nccl-tests where NVIDIA's playbook builds it (~/nccl-tests/build, not on
    PATH: the ranks must find it by its path) and the home directory in `tmp_path`."""
    bindir = tmp_path / "nccl-tests/build"
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "all_reduce_perf").write_text(STAND_IN)
    (bindir / "all_reduce_perf").chmod(0o755)
    nccl = tmp_path / "nccl.env"
    nccl.write_text("# rendered\nNCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1\n")
    command = command.replace("/etc/sparkfab/nccl.env", str(nccl))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.skipif(not shutil.which("mpirun"), reason="no mpirun (openmpi-bin, scripts/setup.sh)")
@pytest.mark.skipif(os.geteuid() != 0, reason="runs mpirun as root, as verify's sudo does")
def test_mpirun_as_root_runs_every_rank_with_its_env(tmp_path):
    plan = _pair()
    inst = plan.instances[0]
    # the command verify sends through `sudo -n` on a root login (no SUDO_USER); a login
    # shell's profile would reset the test's PATH to the stand-in, so a plain shell runs it
    cmd = all_reduce_command(plan, inst).replace("sh -lc", "sh -c")
    res = _run(tmp_path, cmd)
    assert res.returncode == 0, res.stdout[-500:] + res.stderr[-800:]
    lines = [json.loads(x[2:]) for x in res.stdout.splitlines() if x.startswith("@@")]
    ranks = sorted(lines, key=lambda r: r["OMPI_COMM_WORLD_RANK"])
    assert [r["OMPI_COMM_WORLD_RANK"] for r in ranks] == ["0", "1"]
    for r in ranks:
        assert r["NCCL_IB_HCA"] == "=rocep1s0f1,roceP2p1s0f1"  # the env file, read literally
        assert r["UCX_NET_DEVICES"] == "lo" and r["MASTER_ADDR"] == inst.master_addr
        assert r["argv"] == ["-b", "1M", "-e", "256M", "-f", "4", "-d", "bfloat16"]
        assert r["LD_LIBRARY_PATH"].split(":")[0] == f"{tmp_path}/nccl/build/lib"  # -x: every rank's
    rows, avg = parse_nccl_tests(res.stdout)
    assert avg == 10.49 and rows[0].busbw == 10.49
    # without OpenMPI's permission the same mpirun refuses root: what verify used to send
    refused = _run(tmp_path, cmd.replace("export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; ", ""))
    assert refused.returncode != 0 and "attempt to run as root" in refused.stderr + refused.stdout


def test_a_user_login_goes_back_to_that_user(tmp_path):
    """verify runs as root through sudo (SUDO_USER names the login): mpirun runs as that user."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "sudo").write_text('#!/bin/sh\necho "sudo $*"\n')
    (fake / "sudo").chmod(0o755)
    res = subprocess.run(
        ["sh", "-c", as_login("mpirun --version", "OMPI_ALLOW_RUN_AS_ROOT=1")],
        capture_output=True,
        text=True,
        env={"PATH": f"{fake}:/usr/bin:/bin", "SUDO_USER": "ops"},
        timeout=30,
    )
    assert res.stdout.startswith("sudo -n -H -u ops sh -lc cd; mpirun --version"), res.stdout
    assert "OMPI_ALLOW" not in res.stdout
