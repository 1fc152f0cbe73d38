"""The collection's module_utils/sparkfab_netplan_files.py: which netdevs another netplan file
configures, as netplan matches them, the one answer the netplan module and preflight share
(preflight loads the file by its path, without Ansible)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sparkfab.verify.preflight.host import foreign_module

FABRIC = ["enP2p1s0f1np1", "enp1s0f1np1"]  # sorted, as touched() answers
FACTS = {
    "enp1s0f1np1": {"macaddress": "aa:bb:cc:00:00:01", "driver": "mlx5_core"},
    "enP2p1s0f1np1": {"macaddress": "aa:bb:cc:00:00:02", "driver": "mlx5_core"},
}


@pytest.mark.parametrize(
    ("ethernets", "hit"),
    [
        ({"enp1s0f1np1": {"dhcp4": True}}, ["enp1s0f1np1"]),  # by its id
        ({"all-cx7": {"match": {"name": "en*np1"}}}, FABRIC),  # a glob over both twins
        ({"x": {"match": {"macaddress": "AA:BB:CC:00:00:02"}}}, ["enP2p1s0f1np1"]),  # MAC, any case
        ({"x": {"match": {"driver": "mlx5_*"}}}, FABRIC),
        ({"x": {"match": {"driver": "igb"}}}, []),
        ({"x": {"match": {"name": "en*", "macaddress": "aa:bb:cc:00:00:01"}}}, ["enp1s0f1np1"]),  # every key holds
        ({"x": {"match": {"macaddress": "aa:bb:cc:00:00:01"}, "set-name": "enP2p1s0f1np1"}}, FABRIC),
        ({"eno1": {"dhcp4": True}}, []),
    ],
)
def test_a_definition_touches_the_netdevs_netplan_would_give_it(ethernets, hit):
    files = foreign_module()
    assert files.touched({"network": {"ethernets": ethernets}}, FABRIC, FACTS) == hit


def test_a_bond_or_bridge_member_and_a_vlans_link_are_touched():
    files = foreign_module()
    doc = {"network": {"bonds": {"bond0": {"interfaces": ["enp1s0f1np1"]}}, "vlans": {"v5": {"link": "enP2p1s0f1np1"}}}}
    assert files.touched(doc, FABRIC, FACTS) == sorted(FABRIC)
    assert files.touched({"network": "nonsense"}, FABRIC) == [] and files.touched(None, FABRIC) == []


def test_unknown_facts_count_as_a_match():
    """Without sysfs facts (preflight before it read them) a match by driver is a possible hit."""
    files = foreign_module()
    assert files.touched({"network": {"ethernets": {"x": {"match": {"driver": "igb"}}}}}, FABRIC) == FABRIC


def test_files_are_read_in_netplans_order_and_a_name_in_run_shadows_etc(tmp_path):
    files = foreign_module()
    for d, name in (("etc/netplan", "50-a.yaml"), ("run/netplan", "50-a.yaml"), ("lib/netplan", "10-b.yaml")):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / name).write_text("network: {}\n")
    assert files.netplan_files(str(tmp_path)) == [
        str(tmp_path / "lib/netplan/10-b.yaml"),
        str(tmp_path / "run/netplan/50-a.yaml"),
    ]


def test_loading_it_imports_nothing_of_ansible():
    probe = (
        "import sys; from sparkfab.verify.preflight.host import foreign_module; "
        "foreign_module(); print('ansible' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
