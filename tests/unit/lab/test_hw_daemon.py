"""The lab Spark's hardware daemon (`lab/files/sparkfab-lab-hw`) reads every IPv4 address of
the machine in one rtnetlink dump per tick, where it ran `ip` once per device. Its reading is
held to `ip -j -4 addr show`'s of the same kernel, in a network namespace of the test's own with
two addresses on one veth and a point-to-point one (whose peer is not its address)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

DAEMON = Path(__file__).resolve().parents[3] / "fabric/sparkfab/lab/files/sparkfab-lab-hw"

SETUP = """
set -e
ip link set lo up
ip link add sfhw0 type veth peer name sfhw0p
ip addr add 10.91.0.1/24 dev sfhw0
ip addr add 10.91.1.1/24 dev sfhw0
ip link add sfhw1 type veth peer name sfhw1p
ip addr add 10.92.0.1 peer 10.92.0.2 dev sfhw1
ip link add sfhw2 type veth peer name sfhw2p
"""

#: the daemon's reading inside the namespace, through this file's own loader
READ = "import json, sys; sys.path.insert(0, sys.argv[1]); from test_hw_daemon import read; print(json.dumps(read()))"


def read() -> dict[str, list[str]]:
    """The daemon's `ipv4_addresses()`, loaded from its file (it has no .py suffix)."""
    loader = SourceFileLoader("sparkfab_lab_hw", str(DAEMON))
    hw = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(hw)
    return {str(k): v for k, v in hw.ipv4_addresses().items()}


def _ip_view(listing: str) -> dict[str, list[str]]:
    links = json.loads(listing)
    return {str(link["ifindex"]): [a["local"] for a in link["addr_info"]] for link in links if link["addr_info"]}


def test_one_dump_reads_what_ip_lists_here():
    # another test may add or remove an address meanwhile: compare between two listings that agree
    for _ in range(5):
        before = _ip_view(subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True).stdout)
        ours = read()
        after = _ip_view(subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True).stdout)
        if before == after:
            break
    assert before == after and ours == before


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a namespace of its own needs root")
def test_two_addresses_on_one_netdev_and_a_peer_address_read_as_ip_reads_them():
    script = f"{SETUP}\nip -j -4 addr show\necho ---\n{sys.executable} -c '{READ}' {Path(__file__).parent}\n"
    res = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    listing, ours = res.stdout.split("---\n")
    want = _ip_view(listing)
    assert sorted(want.values()) == [["10.91.0.1", "10.91.1.1"], ["10.92.0.1"], ["127.0.0.1"]]
    assert json.loads(ours) == want
