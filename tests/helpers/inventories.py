"""Inventories built in code: rings of any size and orientation, two instances on a switch,
and the netplan file NVIDIA's guide leaves behind."""

from __future__ import annotations

from pathlib import Path

import yaml

from sparkfab.inventory import parse_partial
from sparkfab.resolve import resolve


def plan_of(data):
    inv, problems = parse_partial(data, "test")
    assert inv is not None and not problems, problems
    return resolve(inv, data)


def ring(n, orient, head=None, extra_hosts=0, **sf):
    """A ring of n Sparks; orient[i] = (port used at i toward i+1, port at i+1)."""
    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(n + extra_hosts)}
    cables = [[f"s{i}:{orient[i][0]}", f"s{(i + 1) % n}:{orient[i][1]}"] for i in range(n)]
    inst = {"hosts": [f"s{i}" for i in range(n)], "tp": n}
    if head:
        inst["head"] = head
    return {
        "all": {
            "hosts": hosts,
            "vars": {"sparkfab": {"cluster": "t", "cables": cables, "instances": {"x": inst}, **sf}},
        }
    }


MIXED4 = [("p1", "p1"), ("p0", "p0"), ("p1", "p0"), ("p1", "p0")]  # the 001 ring's cages


MIXED6 = [("p0", "p1"), ("p0", "p0"), ("p1", "p1"), ("p0", "p1"), ("p0", "p0"), ("p1", "p1")]


def two_instances(directory: Path, cluster: str = "two") -> str:
    """Four Sparks on one switch, two TP2 instances of the lab's collective workload."""
    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(4)}
    doc = {
        "all": {
            "hosts": hosts,
            "vars": {
                "sparkfab": {
                    "cluster": cluster,
                    "switches": {"sw1": {"model": "CRS804"}},
                    "cables": [[f"s{i}:p1", f"sw1:{i // 2 + 1}/{i % 2 + 1}"] for i in range(4)],
                    "instances": {
                        "a": {"hosts": ["s0", "s1"], "tp": 2, "launcher": "lab-collective"},
                        "b": {"hosts": ["s2", "s3"], "tp": 2, "launcher": "lab-collective", "port": 8001},
                    },
                }
            },
        }
    }
    path = directory / f"{cluster}.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


#: the shape of the file NVIDIA's connect-two-Sparks guide leaves behind
CX7 = """network:
  version: 2
  ethernets:
    enp1s0f1np1:
      addresses: [192.168.100.10/24]
    enP2p1s0f1np1:
      addresses: [192.168.200.12/24]
"""


def localhost(folder: Path) -> Path:
    """An Ansible inventory of this machine alone (local connection): a real run of a playbook
    without ssh or a lab."""
    path = folder / "inventory.yml"
    path.write_text("all:\n  hosts:\n    local: {ansible_connection: local, ansible_python_interpreter: python3}\n")
    return path


def switched_pair(folder: Path, cluster: str, os: str, lldp_name: str, legs: tuple[str, str], pool: str) -> str:
    """Two Sparks (spark-1, spark-2) on one generic 32-port switch running `os` under `lldp_name`,
    each port 1 cabled to a leg of `legs` ("1/1", "1/2"...), one collective instance across them:
    the inventory file's path, for the lab's per-OS tests."""
    doc = {
        "all": {
            "hosts": {f"spark-{i}": {"ansible_host": f"10.0.9.{i}"} for i in (1, 2)},
            "vars": {
                "sparkfab": {
                    "cluster": cluster,
                    "subnet_pool": pool,
                    "switches": {"leaf": {"model": "generic", "ports": 32, "os": os, "lldp_name": lldp_name}},
                    "cables": [["spark-1:p1", f"leaf:{legs[0]}"], ["spark-2:p1", f"leaf:{legs[1]}"]],
                    "instances": {"main": {"hosts": ["spark-1", "spark-2"], "tp": 2, "launcher": "lab-collective"}},
                }
            },
        }
    }
    inv = folder / f"{cluster}.yml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(inv)
