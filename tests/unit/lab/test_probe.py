"""What a run says of an unreachable lab Spark comes from the real tools reading a real network
namespace: `ip` for the management port, `ss` for port 22, nft's own JSON for the input rules
that drop (iptables' rules among them, as iptables-nft loads them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPT = r"""
import json, socket, subprocess, sys
from sparkfab.lab import probe

def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)

said = {}
sh("ip", "link", "add", "mgmt0", "type", "veth", "peer", "name", "far0")
sh("ip", "addr", "add", "10.9.9.1/24", "dev", "mgmt0")
said["port_down"] = probe._port([], "mgmt0", "10.9.9.1")
sh("ip", "link", "set", "mgmt0", "up")
sh("ip", "link", "set", "far0", "up")
said["port"] = probe._port([], "mgmt0", "10.9.9.1")
said["port_other"] = probe._port([], "mgmt0", "10.9.9.7")
said["port_missing"] = probe._port([], "nosuch0", "10.9.9.1")
said["silent"] = probe._listening([])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 22))
s.listen()
said["listening"] = probe._listening([])
said["open"] = probe._drops([])
sh("nft", "add", "table", "inet", "t")
sh("nft", "add chain inet t in { type filter hook input priority 0; policy drop; }")
said["policy"] = probe._drops([])
sh("nft", "flush", "ruleset")
sh("nft", "add", "table", "ip", "filter")
sh("nft", "add chain ip filter INPUT { type filter hook input priority 0; policy accept; }")
sh("nft", "add", "rule", "ip", "filter", "INPUT", "tcp", "dport", "22", "drop")
said["rule"] = probe._drops([])
said["neighbour"] = probe._neighbour("10.9.9.2")
print(json.dumps(said))
"""


def test_the_lab_view_of_a_spark_is_read_from_its_namespace():
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nft"):
        pytest.skip("needs root, unshare and nft for a network namespace of its own")
    env = {**os.environ, "PYTHONPATH": str(REPO / "fabric")}
    res = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode == 0, res.stderr
    said = json.loads(res.stdout)
    assert said["port_down"] == "10.9.9.1 is on mgmt0, DOWN"
    assert said["port"] == "10.9.9.1 is on mgmt0, UP"
    assert said["port_other"] == "mgmt0 lacks 10.9.9.7 (it holds 10.9.9.1), UP"
    assert said["port_missing"].startswith("its management port nosuch0 cannot be read (")
    assert said["silent"] == "nothing listens on port 22"
    assert said["listening"] == f"{os.path.basename(sys.executable)} listens on port 22"
    assert said["open"] == "its firewall drops nothing on input"
    assert said["policy"] == "its firewall's input drops: inet t in: policy drop"
    assert said["rule"].startswith("its firewall's input drops: ip filter INPUT: a rule that drops (handle ")
    assert said["neighbour"] == "this host's neighbour entry: none"
