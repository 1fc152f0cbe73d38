"""site.yml under real Ansible: before any host is touched, every host has its rendered tree and
its variables meet the roles' argument specs (playbooks/action_plugins/sparkfab_preflight.py),
every problem named at once. The hosts point at a port where nothing listens on loopback, so a
check that let the run go on would show them unreachable."""

from __future__ import annotations

import pytest

from sparkfab.push.run import run_playbook
from tests.conftest import REPO

pytestmark = pytest.mark.slow

HOST = (
    "{ansible_host: 127.0.0.1, ansible_port: 9, sparkfab_files: {}, sparkfab_fabric_ifs: [enp1s0f0np0],"
    " sparkfab_addresses: [{dev: enp1s0f0np0, address: 192.168.100.1/24}], sparkfab_mtu: 9000}"
)


def _inventory(tmp_path, **hosts: str):
    inv = tmp_path / "inventory.yml"
    lines = ["all:", "  vars: {ansible_python_interpreter: python3}", "  hosts:"]
    lines += [f"    {name}: {spec}" for name, spec in hosts.items()]
    inv.write_text("\n".join(lines) + "\n")
    return inv


def test_a_bad_variable_and_a_host_without_its_tree_stop_the_push_before_any_host(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    inv = _inventory(
        tmp_path,
        a=HOST.replace("sparkfab_mtu: 9000", "sparkfab_mtu: lots"),
        b=HOST.replace("sparkfab_fabric_ifs: [enp1s0f0np0], ", "sparkfab_netplan_take_over: maybe, "),
        c=HOST,  # no directory of its own beside the inventory
    )
    result = run_playbook(str(REPO / "playbooks/site.yml"), inv, "t", hosts=["a", "b", "c"], workdir=tmp_path / "state")
    assert result.rc != 0
    assert not any(h.unreachable for h in result.hosts.values()), result.hosts  # no host was contacted
    failed = [h for h in result.hosts.values() if h.failed]
    assert failed and all(h.failed_task.startswith("Fabric | Every host has its rendered tree") for h in failed)
    message = failed[0].message
    assert "c: no rendered tree; run `sparkfab render` and use its inventory.yml" in message
    assert "a: argument 'sparkfab_mtu' is of type str and we were unable to convert to int" in message
    assert (
        "b: missing required arguments: sparkfab_fabric_ifs; "
        "argument 'sparkfab_netplan_take_over' is of type str and we were unable to convert to bool" in message
    )


def test_a_good_tree_passes_the_check_and_the_run_goes_on_to_the_hosts(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "bundles").mkdir()
    (tmp_path / "bundles/a.json").write_text('{"files": {}}')
    inv = _inventory(tmp_path, a=HOST)
    result = run_playbook(str(REPO / "playbooks/site.yml"), inv, "t", hosts=["a"], workdir=tmp_path / "state")
    assert result.rc != 0 and result.hosts["a"].unreachable  # past the check: the host is tried
