"""In the lab: `linkspeed --instance` flips one of two instances on a switch; the other
keeps its speed, its engine and its shaped rate (root)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.inventories import two_instances
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("twoinst"), pytest.mark.lab, requires_lab]

CLUSTER = "twoinst"


def _rate(host: str) -> str:
    """The tbf rate on the Spark's side of its cable to the switch."""
    out = ssh(CLUSTER, host, "tc -j qdisc show dev enp1s0f1np1").stdout
    return str(next(q for q in json.loads(out) if q["kind"] == "tbf")["options"]["rate"])


def _hca(host: str) -> str:
    return ssh(CLUSTER, host, "grep ^NCCL_IB_HCA= /etc/sparkfab/nccl.env").stdout.strip()


def _pid(host: str, inst: str) -> str:
    return ssh(CLUSTER, host, f"cat /run/sparkfab/{inst}.pid").stdout.strip()


def test_one_instance_flips_the_other_keeps_its_speed(tmp_path):
    inv = two_instances(tmp_path, CLUSTER)
    with lab(inv, CLUSTER):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        pids = {"a": _pid("s0", "a"), "b": _pid("s2", "b")}
        assert all(pids.values())

        split = sparkfab("linkspeed", inv, "100e", "--limit", "s1", "--lab", "-q")
        assert split.code == 2 and "leaves out s0 of a" in split.err

        res = sparkfab("linkspeed", inv, "100e", "--instance", "a", "--lab")
        assert res.code == 0, res.err
        assert "link speed of twoinst (a): 200 -> 100e; serving restarted on 2 host(s)" in res.err
        assert res.out.splitlines() == [
            "s0: NCCL_IB_HCA =rocep1s0f1,roceP2p1s0f1 -> =rocep1s0f1",
            "s1: NCCL_IB_HCA =rocep1s0f1,roceP2p1s0f1 -> =rocep1s0f1",
        ]
        assert [_hca(h) for h in ("s0", "s1", "s2", "s3")] == ["NCCL_IB_HCA==rocep1s0f1"] * 2 + [
            "NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1"
        ] * 2
        assert _pid("s0", "a") != pids["a"] and _pid("s2", "b") == pids["b"]
        assert [_rate(h) for h in ("s0", "s2")] == ["25000000", "50000000"]  # bytes/s: 200 and 400 Mbit/s

        # apply and verify read the flipped instance's speed back: nothing to change, all green
        again = sparkfab("apply", inv, "--lab", "-q")
        assert again.code == 0 and "changed=0" in again.err, again.err
        verified = sparkfab("verify", inv, "--lab", "--format", "json")
        assert verified.code == 0, [r for r in json.loads(verified.out)["results"] if r["status"] == "fail"]

        # the whole cluster: the override goes
        assert sparkfab("linkspeed", inv, "200", "--lab", "-q").code == 0
        assert _hca("s0") == _hca("s2") == "NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1"
        assert _rate("s0") == "50000000"
        assert sparkfab("serve", "stop", inv, "--lab", "-q").code == 0
