"""A 32-Spark inventory for benchmarks/push_speed.py (#29's check of the per-host prediction):
two MikroTik CRS804 at 100 Gb/s (4x100G breakouts), sixteen Sparks each, four TP8 instances.

    .venv/bin/python benchmarks/inventory_32.py > /tmp/sw32.yml
    .venv/bin/python benchmarks/push_speed.py --case /tmp/sw32.yml:sw32:32 --strategy mitogen_linear
"""

from __future__ import annotations

import sys

import yaml


def inventory() -> dict:
    hosts = {f"spark-{i + 1:02d}": {"ansible_host": f"10.0.1.{11 + i}"} for i in range(32)}
    names = list(hosts)
    cables = [[f"{h}:p1", f"sw{1 + i // 16}:{1 + (i % 16) // 4}/{1 + i % 4}"] for i, h in enumerate(names)]
    instances = {
        f"glm-{'abcd'[k]}": {"hosts": names[8 * k : 8 * k + 8], "tp": 8, "launcher": "glm-5.3-tp8"} for k in range(4)
    }
    sparkfab = {
        "cluster": "sw32",
        "link_speed": 100,
        "mtu": 9000,
        "subnet_pool": "192.168.200.0/22",
        "control_plane": "management",
        "switches": {"sw1": {"model": "CRS804"}, "sw2": {"model": "CRS804"}},
        "cables": cables,
        "instances": instances,
    }
    return {"all": {"hosts": hosts, "vars": {"sparkfab": sparkfab}}}


if __name__ == "__main__":
    yaml.safe_dump(inventory(), sys.stdout, sort_keys=False, default_flow_style=None)
