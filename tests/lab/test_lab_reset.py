"""In the lab: `sparkfab reset` leaves every host as it was before apply (its files, units,
addresses, routes, firewall, sysctls and MTUs), and the push goes through a login that is not
root (root)."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from sparkfab.paths import lab_dir
from tests.helpers.inventories import CX7
from tests.helpers.lab import lab, machine_init, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("ring4"), pytest.mark.lab, requires_lab]

INV, CLUSTER = "inventory/ring4.yml", "ring4"
HOSTS = ("spark-329f", "spark-355d", "spark-c049", "spark-3d38")

#: what a host is made of, as far as sparkfab touches it: files, addresses, routes, firewall, sysctls, MTUs
SNAPSHOT = " ; ".join(
    [
        "echo '## files'",
        "find /etc/netplan /etc/sparkfab /etc/sysctl.d /etc/lldpd.d -type f 2>/dev/null | sort | xargs -r md5sum",
        "echo '## units'",
        "ls /etc/systemd/system /etc/systemd/system/*.wants | grep sparkfab || true",
        "echo '## addresses'",
        "ip -4 -o addr show | awk '{print $2, $4}' | sort",
        "echo '## routes'",
        "ip -4 route show table all | sort",
        "echo '## sysctls'",
        "sysctl -a 2>/dev/null | grep -E '^net.ipv4.(ip_forward|conf.*(rp_filter|arp_ignore|arp_announce)) ' | sort",
        "echo '## links'",
        "ip -o link show | awk '{print $2, $5}' | sort",
    ]
)

#: how the Spark's owner applied NVIDIA's file (a lab Spark runs netplan as a Spark does)
RELOAD = "chmod 600 /etc/netplan/40-cx7.yaml && netplan apply"


def _ruleset(host: str) -> str:
    """The kernel's ruleset in the Spark's network namespace, read with this machine's nft: a Spark
    as shipped has none of its own (apply installs nftables, and reset leaves it installed)."""
    net = ["nsenter", "-t", str(machine_init(CLUSTER, host)), "-n"]
    res = subprocess.run([*net, "nft", "-s", "list", "ruleset"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return res.stdout  # stateless (-s): without the counters Docker's rules keep


def _snapshot() -> dict[str, str]:
    out = {}
    for h in HOSTS:
        res = ssh(CLUSTER, h, SNAPSHOT)
        assert res.returncode == 0, res.stderr
        kept = "\n".join(line for line in res.stdout.splitlines() if not line.startswith("# Warning"))
        out[h] = f"{kept}\n## nftables\n{_ruleset(h)}"
    return out


def _has_nft(host: str) -> bool:
    """nftables installed (dpkg's word: the last Spark's login is not root, /usr/sbin is not on its PATH)."""
    return ssh(CLUSTER, host, "dpkg-query -W -f='${Status}' nftables").stdout == "install ok installed"


def _wait_addresses(host: str, want: str) -> None:
    for _ in range(100):
        if want in ssh(CLUSTER, host, "ip -4 -o addr show").stdout:
            return
        time.sleep(0.1)
    raise AssertionError(f"{host}: {want} never came")


def _changed(res) -> int:
    m = re.search(r"changed=(\d+)", res.err)
    assert m, res.err
    return int(m.group(1))


def test_reset_restores_every_host_as_it_was_before_apply():
    with lab(INV, CLUSTER):
        # a host that already had a netplan file for its fabric ports (NVIDIA's guide), applied
        assert ssh(CLUSTER, "spark-355d", f"cat > /etc/netplan/40-cx7.yaml <<'EOF'\n{CX7}EOF\n{RELOAD}").returncode == 0
        _wait_addresses("spark-355d", "192.168.100.10/24")
        # the push and the checks below reach the last Spark as a user that is not root
        user = subprocess.run(
            ["ssh", "-F", str(lab_dir(CLUSTER) / "ssh_config"), HOSTS[-1], "id -un"], capture_output=True, text=True
        )
        assert user.stdout.strip() == "spark", user.stderr

        before = _snapshot()
        assert not any(_has_nft(h) for h in HOSTS)  # as shipped: the ring's firewall needs it
        applied = sparkfab("apply", INV, "--lab", "-q", "--take-over-netplan")
        assert applied.code == 0, applied.err
        assert all(_has_nft(h) for h in HOSTS)  # apply installed it from the site's mirror
        assert sparkfab("serve", "start", INV, "--lab", "-q").code == 0
        verified = sparkfab("verify", INV, "--lab", "--format", "json")
        assert verified.code == 0, verified.out[-2000:]
        assert json.loads(verified.out)["counts"]["fail"] == 0
        during = _snapshot()
        assert during != before

        preview = sparkfab("reset", INV, "--lab", "--check", "--diff", "-q")
        assert preview.code == 0, preview.err
        assert "/etc/netplan/60-sparkfab.yaml (removed)" in preview.out
        assert "/etc/netplan/40-cx7.yaml (restored)" in preview.out
        assert _snapshot() == during  # --check changed nothing

        done = sparkfab("reset", INV, "--lab", "-q")
        assert done.code == 0, done.err
        _wait_addresses("spark-355d", "192.168.100.10/24")
        after = _snapshot()
        for h in HOSTS:
            assert after[h] == before[h], h
        assert all(_has_nft(h) for h in HOSTS)  # packages stay: reset undoes configuration
        # serving stopped: no engine left on any Spark
        assert "python" not in ssh(CLUSTER, HOSTS[0], "pgrep -a -f sparkfab/collective || true").stdout
        assert "sparkfab-firewall" in during[HOSTS[1]] and "sparkfab-docker-user" in during[HOSTS[1]]

        again = sparkfab("reset", INV, "--lab", "-q")
        assert again.code == 0, again.err
        assert _changed(again) == 0
        assert _snapshot() == after
