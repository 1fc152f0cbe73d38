"""In the lab: `sparkfab preflight` is green on a healthy lab, whose Sparks present the hardware
it checks, and names what is broken on purpose: a missing netdev, a foreign netplan file,
another image under the recipe's tag (root)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers.inventories import CX7
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("preflight"), pytest.mark.lab, requires_lab]

CLUSTER = "preflight"


def _inventory(tmp_path: Path) -> str:
    text = (REPO / "inventory/pair-1cable.yml").read_text().replace("cluster: pair1", f"cluster: {CLUSTER}")
    (tmp_path / "inv.yml").write_text(text)
    return str(tmp_path / "inv.yml")


def _results(inv: str) -> tuple[int, list[dict[str, str]]]:
    res = sparkfab("preflight", inv, "--lab", "--format", "json")
    return res.code, json.loads(res.out)["results"]


def test_preflight_is_green_on_a_healthy_lab_and_names_what_is_broken(tmp_path):
    inv = _inventory(tmp_path)
    with lab(inv, CLUSTER, engine="vllm"):
        code, results = _results(inv)
        assert code == 0, [r for r in results if r["status"] == "fail"]
        seen = {(r["check"], r["host"]): r for r in results}
        # both logins become root, one of them through sudo
        assert seen["sudo", "spark-b"]["detail"] == "spark through sudo with the become password"
        assert seen["sudo", "spark-a"]["detail"] == "login is root"
        # the hardware's facts are there: RDMA devices, Docker with GPU support, the image
        assert {r["check"] for r in results if r["status"] == "pass"} >= {
            "ssh",
            "sudo",
            "netdev",
            "rdma",
            "netplan",
            "docker",
            "image",
            "model",
            "port",
        }
        nccl = next(r for r in results if r["check"] == "nccl-version")
        assert nccl["status"] == "skip" and "gloo" in nccl["detail"]  # the lab's engine has no NCCL

        # break the hosts: a netdev with another name, a netplan file of NVIDIA's guide, another build
        assert (
            ssh(
                CLUSTER, "spark-a", "ip link set enp1s0f1np1 down && ip link set enp1s0f1np1 name cx7-renamed"
            ).returncode
            == 0
        )
        assert ssh(CLUSTER, "spark-b", f"cat > /etc/netplan/40-cx7.yaml <<'EOF'\n{CX7}EOF").returncode == 0
        image = "sparkfab-lab/vllm-cpu:0.32.0"  # another build under the recipe's tag
        assert ssh(CLUSTER, "spark-b", f"tar -C /etc -cf - hostname | docker import - {image}").returncode == 0

        code, results = _results(inv)
        assert code == 4
        failed = {(r["check"], r["host"], r["subject"]): r for r in results if r["status"] == "fail"}
        assert set(failed) == {
            ("netdev", "spark-a", "enp1s0f1np1"),
            ("netplan", "spark-b", "/etc/netplan/40-cx7.yaml"),
            ("image", "spark-b", "llama"),
        }
        assert "--take-over-netplan" in failed["netplan", "spark-b", "/etc/netplan/40-cx7.yaml"]["detail"]
        assert failed["image", "spark-b", "llama"]["detail"] == image
        table = sparkfab("preflight", inv, "--lab")
        assert table.code == 4 and "FAIL: " in table.out and "3 failed" in table.out

        # --limit, as ansible-playbook takes it: the rows of the hosts it selects, and a row for
        # the instance it holds in part (the checks across its ranks need them all)
        for verb in ("preflight", "verify"):
            res = sparkfab(verb, inv, "--lab", "--format", "json", "--limit", "all:!spark-b")
            assert res.out, (verb, res.code, res.err[-800:])
            rows = json.loads(res.out)["results"]
            assert res.code == 4 and {r["host"] for r in rows} == {"spark-a"}, (verb, res.err[-500:])
            assert ("netdev", "spark-a", "enp1s0f1np1") in {(r["check"], r["host"], r["subject"]) for r in rows}
            [part] = [r for r in rows if r["check"] == "instance"]
            assert part["status"] == "skip" and "--limit leaves out spark-b" in part["detail"], part
        none = sparkfab("verify", inv, "--lab", "--limit", "spark-z*")
        assert none.code == 2 and "--limit spark-z* selects no host of preflight" in none.err
