"""The lab Spark is a machine: it boots (systemd), runs Docker, presents the hardware's facts per
mode, and reboots for real; and the paths only a Spark took before are taken in the lab."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from sparkfab.lab.spec import shipped_hostname
from tests.conftest import REPO
from tests.helpers.lab import lab, machine_init, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.lab, requires_lab]


def _verify(inventory: str, *extra: str) -> tuple[int, dict]:
    res = sparkfab("verify", inventory, "--lab", "--format", "json", *extra)
    return res.code, json.loads(res.out)


def _fails(report: dict) -> list[dict]:
    return [r for r in report["results"] if r["status"] == "fail"]


def _checks(report: dict, host: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in report["results"]:
        if r["host"] == host and r["status"] == "pass":
            out[r["check"]] = out.get(r["check"], 0) + 1
    return out


TEXT: dict = {"capture_output": True, "text": True, "timeout": 30}


@pytest.mark.xdist_group("pair1")
def test_a_spark_is_a_booted_machine_with_its_own_init_and_docker():
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        probe = ssh(
            "pair1", "spark-b", "cat /proc/1/comm; systemctl is-system-running; hostname; id -un; sudo -n id -un"
        )  # (root already: sudo asks nothing)
        # named as DGX OS names a Spark, not by its inventory key
        shipped = shipped_hostname("pair1", "spark-b")
        assert re.fullmatch(r"spark-[0-9a-f]{4}", shipped) and shipped != "spark-b"
        assert probe.stdout.split() == ["systemd", "running", shipped, "root", "root"], probe.stdout + probe.stderr
        units = ssh("pair1", "spark-a", "systemctl is-active ssh systemd-networkd lldpd docker containerd")
        assert units.stdout.split() == ["active"] * 5
        # a Spark's owner logs in and becomes root through sudo with the login's password (the
        # lab's last Spark), as on a Spark: without the password, sudo refuses
        from sparkfab.lab.image import LOGIN_PASSWORD

        cmd = ["ssh", "-F", "/var/lib/sparkfab/lab/pair1/ssh_config", "spark-b"]
        raw = subprocess.run([*cmd, "id -un; sudo -S -p '' id -un"], input=LOGIN_PASSWORD + "\n", **TEXT)
        assert raw.stdout.split() == ["spark", "root"], raw.stderr
        refused = subprocess.run([*cmd, "sudo -n id -un"], **TEXT)
        assert refused.returncode != 0 and "password is required" in refused.stderr
        # Docker's own rules: FORWARD policy DROP in the Spark's network namespace, not here
        assert "-P FORWARD DROP" in ssh("pair1", "spark-a", "iptables -S FORWARD").stdout
        here = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True)
        assert "-P FORWARD DROP" not in here.stdout
        # each machine's units live in cgroups of its own (shared ones broke a Spark's boot when
        # another Spark removed a unit's cgroup as this one moved a process into it)
        seen = {}
        for host in ("spark-a", "spark-b"):
            own = ssh("pair1", host, "cat /proc/self/cgroup").stdout
            here_path = ssh("pair1", host, "cat /proc/1/cgroup").stdout
            assert "system.slice/ssh.service" in own, own
            outside = Path(f"/proc/{machine_init('pair1', host)}/cgroup").read_text()
            seen[host] = {line for line in outside.splitlines() if "sparkfab-lab/pair1/" in line}
            assert seen[host] and all(f"sparkfab-lab/pair1/{host}/" in line for line in seen[host]), outside
            assert here_path.splitlines()[-1].endswith("/init.scope")
        assert not seen["spark-a"] & seen["spark-b"]


@pytest.mark.xdist_group("ring4")
def test_reboot_keeps_the_fabric_without_apply():
    """A relay of the ring reboots: its kernel state is gone (the lab makes its namespace anew) and
    everything comes back from what apply persisted: netplan (addresses, routes with their source,
    MTU), sysctls, sparkfab's firewall table (its own unit) and the DOCKER-USER rules once Docker
    is up. verify is green without another apply. Its neighbours keep their netdevs (a cable's far
    side only loses carrier). The engine does not come back by itself (the documented policy:
    `--restart no`, no unit); `serve restart` starts the instance again."""
    inv = str(REPO / "inventory/ring4.yml")
    indexes = "for d in /sys/class/net/en*; do echo ${d##*/} $(cat $d/ifindex); done"
    with lab(inv, "ring4"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        code, report = _verify(inv)
        assert code == 0, _fails(report)
        before = _checks(report, "spark-355d")
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        pid = ssh("ring4", "spark-355d", "cat /run/sparkfab/glm.pid").stdout.strip()
        assert ssh("ring4", "spark-355d", f"kill -0 {pid}").returncode == 0
        neighbour = ssh("ring4", "spark-329f", indexes).stdout
        # what a reboot takes away (the kernel's state, /run) and what it keeps (the disk)
        mark = "ip addr add 10.99.0.1/32 dev lo && touch /run/sparkfab-test /var/tmp/sparkfab-test"
        assert ssh("ring4", "spark-355d", mark).returncode == 0
        res = sparkfab("lab", "reboot", inv, "spark-355d")
        assert res.code == 0 and "spark-355d rebooted" in res.err, res.err
        # it returns once the Spark is ready: its fabric's addresses and routes are back
        assert "addresses and routes back" in res.err, res.err
        after = ssh("ring4", "spark-355d", "ip -o addr show dev lo; ls /run/sparkfab-test /var/tmp/sparkfab-test")
        assert "10.99.0.1" not in after.stdout and "/var/tmp/sparkfab-test" in after.stdout
        assert "/run/sparkfab-test" not in after.stdout
        # everything apply persisted is back at once; the engine is not (the policy), and verify says so
        code, report = _verify(inv)
        fails = [(f["check"], f["host"]) for f in _fails(report)]
        assert fails == [("engine", "spark-355d")], _fails(report)
        rest = {k: v for k, v in _checks(report, "spark-355d").items() if k != "engine"}
        assert rest == {k: v for k, v in before.items() if k != "engine"}
        table = ssh(
            "ring4", "spark-355d", "nft list table inet sparkfab | head -3; systemctl is-enabled sparkfab-firewall"
        )
        assert "table inet sparkfab" in table.stdout and "enabled" in table.stdout
        rules = ssh("ring4", "spark-355d", "iptables -S DOCKER-USER | grep -c sparkfab").stdout.strip()
        assert int(rules) == 12  # every ordered pair of its four fabric netdevs
        assert ssh("ring4", "spark-329f", indexes).stdout == neighbour
        # serving: the rebooted rank is gone and stays gone until the instance is restarted in order
        assert ssh("ring4", "spark-355d", f"kill -0 {pid}").returncode != 0
        again = sparkfab("serve", "restart", inv, "--lab", "-q")
        assert again.code == 0, again.err
        pid = ssh("ring4", "spark-355d", "cat /run/sparkfab/glm.pid").stdout.strip()
        assert ssh("ring4", "spark-355d", f"kill -0 {pid}").returncode == 0
        code, report = _verify(inv)
        assert code == 0, _fails(report)
        # the same checks as before the engine started, all passing again, and its engine running
        after = _checks(report, "spark-355d")
        assert after.pop("engine") == 1 and after == {k: v for k, v in before.items() if k != "engine"}


@pytest.mark.xdist_group("pair100")
def test_a_100g_lab_is_held_to_100g_and_fails_a_200g_expectation(tmp_path):
    """link_speed 100 on direct cables means 100G (QSFP28) cables: the lab's Sparks present
    100 Gb/s, verify expects it; the same lab read as a 200G cluster fails every rate check."""
    data = yaml.safe_load((REPO / "inventory/pair-1cable.yml").read_text())
    data["all"]["vars"]["sparkfab"]["link_speed"] = 100
    data["all"]["vars"]["sparkfab"]["cluster"] = "pair100"
    inv = tmp_path / "pair100.yml"
    inv.write_text(yaml.safe_dump(data))
    with lab(str(inv), "pair100"):
        assert sparkfab("apply", str(inv), "--lab", "-q").code == 0
        code, report = _verify(str(inv))
        assert code == 0, _fails(report)
        speeds = {r["actual"] for r in report["results"] if r["check"] == "speed"}
        rates = {r["actual"] for r in report["results"] if r["check"] == "rdma-rate"}
        assert speeds == {"100000"} and all(r.startswith("100 Gb/sec") for r in rates)
        data["all"]["vars"]["sparkfab"]["link_speed"] = 200
        inv.write_text(yaml.safe_dump(data))
        code, report = _verify(str(inv))
        wrong = {r["check"] for r in _fails(report)}
        # (its files were rendered at 100 and differ too)
        assert code == 4 and {"speed", "rdma-rate"} <= wrong <= {"speed", "rdma-rate", "file"}, wrong
