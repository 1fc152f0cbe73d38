"""Sparks whose network NetworkManager runs, as on Ubuntu 24.04 desktop and DGX OS (the lab's
"nm" image: NetworkManager renders netplan, systemd-networkd installed and not enabled, the
management port an NM profile of its own, the fabric ports NM's automatic "Wired connection"s).
Rendered for networkd (the default), the push is refused on every Spark before anything changes:
NetworkManager holds the fabric ports with its automatic connections, and systemd-networkd would
configure them beside it. Rendered for NetworkManager (`netplan_renderer`), netplan apply restarts
NetworkManager under Ansible's own connection and the push goes on to its last task; verify is
green, again after a reboot without another apply, and a second apply changes nothing. A Spark
where NetworkManager does not run refuses a NetworkManager rendering; once NetworkManager holds
the ports only with netplan's own profiles, a networkd rendering is taken (netplan hands them
over) and verify is green."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("nmring"), pytest.mark.lab, requires_lab]
CLUSTER = "nmring"


def _inventory(tmp_path, renderer: str | None) -> str:
    data = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    sf = data["all"]["vars"]["sparkfab"]
    sf["cluster"] = CLUSTER
    if renderer:
        sf["netplan_renderer"] = renderer
    path = tmp_path / f"ring-{renderer or 'default'}.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _nm(host: str) -> str:
    """NetworkManager's main process and when it last started (a restart changes both)."""
    return ssh(CLUSTER, host, "systemctl show NetworkManager -p MainPID -p ActiveEnterTimestampMonotonic").stdout


def _green(inventory: str, within_s: float = 0.0) -> float:
    """verify is green, at once or within `within_s` (NetworkManager on every Spark converging after
    a reboot); how long it took. A failure says what NetworkManager shows on every Spark."""
    began = time.monotonic()
    while True:
        checked = sparkfab("verify", inventory, "--lab", "--format", "json")
        if checked.code == 0:
            return time.monotonic() - began
        if time.monotonic() - began >= within_s:
            break
        time.sleep(5)
    failed = [r for r in json.loads(checked.out)["results"] if r["status"] == "fail"]
    hosts = list(yaml.safe_load((REPO / "inventory/ring4.yml").read_text())["all"]["hosts"])
    states = {h: ssh(CLUSTER, h, "nmcli -t -f DEVICE,STATE,CONNECTION device; ip -br -4 addr").stdout for h in hosts}
    raise AssertionError(f"verify not green after {within_s:g} s: {failed[:6]}\nNetworkManager: {states}")


def test_apply_reboot_and_verify_under_network_manager(tmp_path):
    networkd, nm = _inventory(tmp_path, None), _inventory(tmp_path, "NetworkManager")
    hosts = list(yaml.safe_load((REPO / "inventory/ring4.yml").read_text())["all"]["hosts"])
    with lab(nm, CLUSTER, "collective", "--shipped", "nm"):
        state = ssh(CLUSTER, hosts[0], "systemctl is-active NetworkManager systemd-networkd; nmcli -t device")
        assert state.stdout.split()[:2] == ["active", "inactive"], state.stdout
        assert ":connected:management" in state.stdout, state.stdout

        # rendered for networkd: refused while NetworkManager holds the ports, nothing changed
        refused = sparkfab("apply", networkd, "--lab")
        said = " ".join(refused.err.split())  # the table wraps long lines
        assert refused.code != 0, refused.err[-2000:]
        held = "NetworkManager holds enP2p1s0f0np0, enP2p1s0f1np1, enp1s0f0np0, enp1s0f1np1 with its own connections"
        assert held in said and "set netplan_renderer: NetworkManager under sparkfab: (networkd" in said, said
        for host in hosts:
            after = ssh(CLUSTER, host, "systemctl is-active systemd-networkd; ls /etc/netplan").stdout
            assert after.split()[0] == "inactive" and "60-sparkfab.yaml" not in after, (host, after)

        # a Spark where NetworkManager does not run refuses a rendering for it, and nothing changes
        assert ssh(CLUSTER, hosts[2], "systemctl stop NetworkManager").returncode == 0
        refused = sparkfab("apply", nm, "--lab")
        said = " ".join(refused.err.split())
        assert refused.code != 0 and "NetworkManager does not run on this host" in said, said[-2000:]
        assert "renderer: NetworkManager" not in ssh(CLUSTER, hosts[0], "cat /etc/netplan/60-sparkfab.yaml").stdout
        assert ssh(CLUSTER, hosts[2], "systemctl start NetworkManager").returncode == 0

        # rendered for NetworkManager: netplan apply restarts it under Ansible's connection, and
        # the push goes on to its last task on every Spark
        before = {h: _nm(h) for h in hosts}
        applied = sparkfab("apply", nm, "--lab")
        assert applied.code == 0, applied.err[-3000:]
        for host in hosts:
            assert _nm(host) != before[host], host  # restarted by netplan apply during the push
            devices = ssh(CLUSTER, host, "nmcli -t -f DEVICE,CONNECTION device").stdout
            assert "enp1s0f0np0:netplan-enp1s0f0np0" in devices, (host, devices)
        _green(nm)

        # a reboot: NetworkManager brings the fabric back from netplan's profiles, no apply
        rebooted = sparkfab("lab", "reboot", nm, hosts[1])
        assert rebooted.code == 0 and "addresses and routes back" in rebooted.err, rebooted.err
        # green once NetworkManager has settled everywhere: in CI under a second worker's lab, a
        # Spark the reboot did not touch (spark-3d38, the cable to spark-329f) once lacked its
        # fabric address at the first verify; alone it is green at once
        print(f"verify green {_green(nm, within_s=90):.1f} s after the reboot")
        again = sparkfab("apply", nm, "--lab")
        assert again.code == 0 and "changed=0" in again.err, again.err[-2000:]

        # back to networkd: NetworkManager holds the ports only with netplan's profiles, which
        # netplan apply removes (restarting it with netplan's list of netdevs to leave)
        assert sparkfab("apply", networkd, "--lab", "-q").code == 0
        ports = ssh(CLUSTER, hosts[0], "networkctl --no-pager list; nmcli -t -f DEVICE,STATE device").stdout
        assert "enp1s0f0np0   ether    routable    configured" in ports, ports
        assert "enp1s0f0np0:connected (externally)" in ports or "enp1s0f0np0:unmanaged" in ports, ports
        _green(networkd)
        last = sparkfab("apply", networkd, "--lab")
        assert last.code == 0 and "changed=0" in last.err, last.err[-2000:]
