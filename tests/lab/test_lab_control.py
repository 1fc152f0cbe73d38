"""In the lab: the fabric control plane on rings of 5, 6 and 8, next to Docker's own FORWARD
policy (each lab Spark runs Docker) and next to a netplan file from NVIDIA's guide (root)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.inventories import CX7
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.lab, requires_lab]


def ring_inventory(tmp_path: Path, n: int) -> tuple[str, str]:
    """A switchless ring of n lab Sparks, control traffic over the fabric, cages mixed."""
    cluster = f"fring{n}"
    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(n)}
    nxt = ["p0" if i % 3 else "p1" for i in range(n)]  # cages mixed: each Spark faces next on its own
    other = {"p0": "p1", "p1": "p0"}
    cables = [[f"s{i}:{nxt[i]}", f"s{(i + 1) % n}:{other[nxt[(i + 1) % n]]}"] for i in range(n)]
    doc = {
        "all": {
            "hosts": hosts,
            "vars": {
                "sparkfab": {
                    "cluster": cluster,
                    "control_plane": "fabric",
                    "subnet_pool": "192.168.64.0/18",
                    "cables": cables,
                    "instances": {"tp": {"hosts": list(hosts), "tp": n, "launcher": "lab-collective"}},
                }
            },
        }
    }
    path = tmp_path / f"{cluster}.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path), cluster


def _verify(inv: str, *extra: str) -> tuple[int, dict]:
    res = sparkfab("verify", inv, "--lab", "--format", "json", *extra)
    return res.code, json.loads(res.out)


def _fails(report: dict) -> list[dict]:
    return [r for r in report["results"] if r["status"] == "fail"]


# an odd ring and an even one (ties forward); a ring of six is rendered and routed in
# tests/unit/render (test_ring6_fabric_control_plane_reaches_everyone)
@pytest.mark.parametrize(
    "n",
    [
        pytest.param(5, marks=pytest.mark.xdist_group("fring5")),
        pytest.param(8, marks=[pytest.mark.slow, pytest.mark.xdist_group("fring8")]),
    ],
)
def test_fabric_control_plane_connects_on_rings(tmp_path, n):
    from sparkfab.resolve import load_plan

    inv, cluster = ring_inventory(tmp_path, n)
    plan = load_plan(inv)
    with lab(inv, cluster):
        applied = sparkfab("apply", inv, "--lab", "-q")
        assert applied.code == 0, applied.err
        code, report = _verify(inv, "--collective")
        assert code == 0 and report["ok"], _fails(report)
        assert report["collective"]["tp"]["ok"]
        tcp = [r for r in report["results"] if r["check"] == "tcp"]
        assert len(tcp) == n * (n - 1) * 2  # every ordered pair, master port and API port
        # routed pairs leave from the source's control address, whatever the egress netdev
        for r in tcp:
            hops = r["detail"].split("path ")[1].split(" (")[0].split(" > ")
            if len(hops) > 2:
                assert r["detail"].startswith(f"source {plan.host(r['host']).control_address},"), r


@pytest.mark.xdist_group("fring5")
def test_docker_forward_policy_before_and_after_apply(tmp_path):
    """Each lab Spark runs Docker from boot: its FORWARD policy DROP is there before apply and
    kills relayed control traffic until apply adds the fabric pairs to DOCKER-USER; a Docker
    restart (its chains written anew) keeps them; a flushed DOCKER-USER is named by verify."""
    inv, cluster = ring_inventory(tmp_path, 5)
    with lab(inv, cluster):
        assert "-P FORWARD DROP" in ssh(cluster, "s1", "iptables -S FORWARD").stdout  # Docker's, from boot
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        restarted = sparkfab("lab", "wire", inv, "--docker", "s3")  # Docker restarts after apply
        assert restarted.code == 0 and "Docker restarted" in restarted.out, restarted.err
        code, report = _verify(inv, "--collective")
        assert code == 0 and report["collective"]["tp"]["ok"], _fails(report)
        passed = {r["host"]: r["actual"] for r in report["results"] if r["check"] == "forward-policy"}
        assert passed["s1"].startswith("accepted in DOCKER-USER past table ip filter chain FORWARD")
        assert passed["s3"].startswith("accepted in DOCKER-USER")
        # somebody flushes DOCKER-USER: verify names the chain and the relay, and does not hang
        assert ssh(cluster, "s1", "iptables -w -F DOCKER-USER").returncode == 0
        code, report = _verify(inv, "--collective")
        assert code == 4
        bad = _fails(report)
        policy = [r for r in bad if r["check"] == "forward-policy"]
        assert [r["host"] for r in policy] == ["s1"]
        assert policy[0]["actual"].startswith("table ip filter chain FORWARD (policy drop): drops")
        relayed = [r for r in bad if r["check"] == "tcp"]
        assert relayed and all(
            "s1 drops forwarded traffic: table ip filter chain FORWARD" in r["detail"] for r in relayed
        )
        coll = next(r for r in bad if r["check"] == "collective")
        assert coll["actual"] == "not run" and "does not connect" in coll["detail"]
        # apply puts the rules back (the push's check counts the missing rules with the
        # script's --check: a change), and the next apply finds nothing to change
        again = sparkfab("apply", inv, "--lab", "-q")
        assert again.code == 0 and " changed=0 " not in again.err, again.out + again.err
        code, report = _verify(inv)
        assert code == 0, _fails(report)
        still = sparkfab("apply", inv, "--lab", "-q")
        assert still.code == 0 and " changed=0 " in still.err, still.out + still.err


@pytest.mark.xdist_group("pair1")
def test_foreign_netplan_file_is_refused_then_taken_over(tmp_path):
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        assert (
            ssh(
                "pair1",
                "spark-a",
                f"cat > /etc/netplan/40-cx7.yaml <<'EOF'\n{CX7}EOF\nchmod 600 /etc/netplan/40-cx7.yaml",
            ).returncode
            == 0
        )
        refused = sparkfab("apply", inv, "--lab", "-q")
        assert refused.code == 2, refused.err
        assert (
            "spark-a: foreign netplan file: /etc/netplan/40-cx7.yaml configures enP2p1s0f1np1, enp1s0f1np1"
            in refused.err
        )
        assert "--take-over-netplan" in refused.err
        # any_errors_fatal: nothing was installed anywhere
        assert ssh("pair1", "spark-b", "ls /etc/netplan").stdout.strip() == ""
        preview = sparkfab("apply", inv, "--lab", "--check", "--diff", "--take-over-netplan", "-q")
        assert preview.code == 0, preview.err
        assert (
            "--- spark-a:/etc/netplan/40-cx7.yaml (now)" in preview.out
            and "-      addresses: [192.168.100.10/24]" in preview.out
        )
        assert ssh("pair1", "spark-a", "test -e /etc/netplan/40-cx7.yaml").returncode == 0
        done = sparkfab("apply", inv, "--lab", "-q", "--take-over-netplan")
        assert done.code == 0, done.err
        assert ssh("pair1", "spark-a", "ls /etc/netplan").stdout.split() == ["60-sparkfab.yaml"]
        assert ssh("pair1", "spark-a", "cat /etc/sparkfab/backup/netplan/40-cx7.yaml").stdout == CX7
        addrs = ssh("pair1", "spark-a", "ip -4 -o addr show dev enp1s0f1np1").stdout
        assert "192.168.100.10/" not in addrs and "192.168.100.1/24" in addrs
        code, report = _verify(inv)
        assert code == 0, _fails(report)


MAC_MATCH = """network:
  version: 2
  ethernets:
    cx7:
      match: {{macaddress: "{mac}"}}
      addresses: [10.9.9.9/24]
"""


@pytest.mark.xdist_group("pair1")
def test_a_match_by_mac_goes_to_networkd_as_the_permanent_address_and_apply_refuses_it(tmp_path):
    """A netplan definition that matches by hardware (NVIDIA's guide matches by driver, an owner's
    file often by MAC address) configures the fabric netdev under an id that is not its name, from
    a .network file that sorts before sparkfab's. netplan writes the MAC match as networkd's
    PermanentMACAddress=, which a ConnectX-7 has (its burned-in address) and a lab veth does not:
    here the Spark's own netplan shows what networkd is given, and apply reads the netdev's facts
    on the host and refuses the file before it writes. (A match by driver would take every veth of
    a lab Spark, its management port too; the unit tests cover the driver.)"""
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        mac = ssh("pair1", "spark-a", "cat /sys/class/net/enp1s0f1np1/address").stdout.strip()
        assert mac.count(":") == 5
        doc = MAC_MATCH.format(mac=mac)
        put = f"cat > /etc/netplan/10-cx7.yaml <<'EOF'\n{doc}EOF\nchmod 600 /etc/netplan/10-cx7.yaml"
        assert ssh("pair1", "spark-a", f"{put} && netplan generate").returncode == 0
        unit = ssh("pair1", "spark-a", "cat /run/systemd/network/10-netplan-cx7.network").stdout
        assert f"PermanentMACAddress={mac}" in unit and "Address=10.9.9.9/24" in unit, unit
        refused = sparkfab("apply", inv, "--lab", "-q")
        assert refused.code == 2, refused.err
        assert "spark-a: foreign netplan file: /etc/netplan/10-cx7.yaml configures" in refused.err
        assert "enp1s0f1np1" in refused.err.split("10-cx7.yaml configures")[1]
        assert ssh("pair1", "spark-b", "ls /etc/netplan").stdout.strip() == ""  # no host was half-applied
