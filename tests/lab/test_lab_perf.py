"""`verify --perf`'s nccl-tests path run as on Sparks: OpenMPI's mpirun (Debian's openmpi-bin in
the lab image) started on rank 0 as the login user, the other rank started over ssh from Spark
to Spark, each rank with its own rendered nccl.env and MPI's own traffic pinned to the
management interface; a CPU stand-in for all_reduce_perf (tests/data/standins) all-reduces
over Gloo and prints nccl-tests' table, which verify reads. It is installed where NVIDIA's DGX
Spark playbook builds nccl-tests (~/nccl-tests/build, with NCCL in ~/nccl/build), not on any
PATH. The Sparks arrive without a key to reach each other: preflight says so, `peer-ssh` gives
rank 0's login one."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from sparkfab.lab.spec import shipped_hostname
from tests.conftest import REPO
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("pair1"), pytest.mark.lab, requires_lab]
INV, CLUSTER = str(REPO / "inventory/pair-1cable.yml"), "pair1"


#: the home of rank 0's login (spark-a logs in as root): mpirun starts the binary at the path
#: rank 0 expands, on every rank, as NVIDIA's playbook assumes one layout everywhere
HOME = "/root"


def _install_standin(host: str) -> None:
    text = (REPO / "tests/data/standins/all_reduce_perf").read_text()
    text = text.replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1)  # the Python with torch, bound in
    bindir, lib = f"{HOME}/nccl-tests/build", f"{HOME}/nccl/build/lib"
    cmd = (
        f"mkdir -p {bindir} {lib} && cat > {bindir}/all_reduce_perf <<'EOF'\n{text}EOF\n"
        f"chmod 755 {bindir}/all_reduce_perf && : > {lib}/libnccl.so.2.30.7 && "
        f"ln -sf libnccl.so.2.30.7 {lib}/libnccl.so.2"
    )
    assert ssh(CLUSTER, host, cmd).returncode == 0


def test_verify_perf_runs_mpirun_across_sparks_with_each_ranks_env():
    with lab(INV, CLUSTER):
        assert sparkfab("apply", INV, "--lab", "-q").code == 0
        pre = json.loads(sparkfab("preflight", INV, "--lab", "--format", "json").out)["results"]
        mpi = [r for r in pre if r["check"].startswith("mpi")]
        assert [(r["check"], r["status"]) for r in mpi] == [("mpi", "warn")]  # no all_reduce_perf yet
        for host in ("spark-a", "spark-b"):
            _install_standin(host)
        pre = json.loads(sparkfab("preflight", INV, "--lab", "--format", "json").out)["results"]
        ssh_row = next(r for r in pre if r["check"] == "mpi-ssh")
        assert ssh_row["status"] == "warn", ssh_row  # as shipped: spark-a has no key spark-b accepts
        assert sparkfab("peer-ssh", INV, "--lab", "-q").code == 0
        again = sparkfab("peer-ssh", INV, "--lab", "-q")
        assert again.code == 0 and "changed=0" in again.err, again.err
        pre = json.loads(sparkfab("preflight", INV, "--lab", "--format", "json").out)["results"]
        ssh_row = next(r for r in pre if r["check"] == "mpi-ssh")
        assert ssh_row["status"] == "pass" and ssh_row["subject"].startswith("-> spark-b")

        res = sparkfab("verify", INV, "--lab", "--perf", "--format", "json")
        rows = {
            r["check"]: r
            for r in json.loads(res.out)["results"]
            if r["check"] in ("ib_write_bw", "all_reduce_perf", "nccl-tests")
        }
        tools = [r for r in json.loads(res.out)["results"] if r["check"] == "nccl-tests"]
        assert {(r["host"], r["status"], r["actual"]) for r in tools} == {
            ("spark-a", "pass", "NCCL 2.30.7"),
            ("spark-b", "pass", "NCCL 2.30.7"),
        }
        assert rows["ib_write_bw"]["status"] == "skip"  # perftest is not installed: said, not failed
        ar = rows["all_reduce_perf"]
        assert ar["detail"] == "", ar  # nccl-tests' table came back and was read
        assert ar["expected"] == "busbw >= 166.2 Gb/s" and ar["actual"].endswith("GB/s)")
        # the lab's cables run at 1:500 of a Spark's: the mark is a Spark's, the lab cannot meet it
        assert ar["status"] == "fail" and res.code == 4
        # every rank ran where mpirun put it, with its own nccl.env and MPI pinned to management
        ranks = {}
        for host in ("spark-a", "spark-b"):
            out = ssh(CLUSTER, host, "cat /tmp/sparkfab-standin-*.json").stdout
            ranks[host] = json.loads(out)
            nccl = ssh(CLUSTER, host, "grep ^NCCL_IB_HCA= /etc/sparkfab/nccl.env").stdout.strip()
            assert ranks[host]["NCCL_IB_HCA"] == nccl.split("=", 1)[1]
            # the rank's own hostname: as DGX OS names a Spark, not the inventory's key
            assert ranks[host]["UCX_NET_DEVICES"] == "enP7s7" and ranks[host]["host"] == shipped_hostname(CLUSTER, host)
        assert sorted(r["rank"] for r in ranks.values()) == [0, 1]
        assert ranks["spark-a"]["uid"] == 0  # a root login: mpirun with OpenMPI's permission
        assert shlex.split("-b 1M -e 256M -f 4 -d bfloat16") == ranks["spark-b"]["argv"]
