"""The netplan role's module, run as Ansible runs it: other netplan files that configure a
fabric netdev, the planned file validated by netplan and installed, the live fabric compared."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers.inventories import CX7

MODULE = REPO / "roles/sparkfab_netplan/library/sparkfab_netplan.py"


@pytest.fixture(autouse=True)
def _module_utils(collections, monkeypatch):
    """The module imports the collection's module_utils, which Ansible ships beside it."""
    monkeypatch.setenv("PYTHONPATH", str(collections))


FABRIC = ["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"]

MGMT = "network:\n  version: 2\n  ethernets:\n    enP7s7:\n      dhcp4: true\n"


def _run(root: Path, **args):
    args = {"netdevs": FABRIC, "root": str(root), **args}
    f = root / "args.json"
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    res = subprocess.run([sys.executable, str(MODULE), str(f)], capture_output=True, text=True)
    return json.loads(res.stdout)


def _tree(tmp_path: Path, **files: str) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_nvidia_file_is_refused_with_file_and_netdevs_named(tmp_path):
    root = _tree(
        tmp_path,
        **{"etc/netplan/40-cx7.yaml": CX7, "etc/netplan/50-cloud-init.yaml": MGMT, "etc/netplan/60-sparkfab.yaml": CX7},
    )
    res = _run(root)
    assert res["failed"]
    assert f"foreign netplan file: {root}/etc/netplan/40-cx7.yaml configures enP2p1s0f1np1, enp1s0f1np1." in res["msg"]
    assert "--take-over-netplan" in res["msg"] and "50-cloud-init" not in res["msg"]
    assert (root / "etc/netplan/40-cx7.yaml").exists()


def test_clean_host_changes_nothing(tmp_path):
    res = _run(_tree(tmp_path, **{"etc/netplan/50-cloud-init.yaml": MGMT}))
    assert res["changed"] is False and res["foreign"] == []


def test_match_globs_set_name_bonds_and_vlans_count(tmp_path):
    root = _tree(
        tmp_path,
        **{
            "etc/netplan/10-glob.yaml": "network:\n  ethernets:\n    cx:\n      match: {name: 'enp1s0f*'}\n",
            "etc/netplan/20-bond.yaml": "network:\n  bonds:\n    bond0:\n      interfaces: [enP2p1s0f0np0]\n",
            "etc/netplan/30-vlan.yaml": "network:\n  vlans:\n    v5: {id: 5, link: enP2p1s0f1np1}\n",
            "etc/netplan/40-bad.yaml": "network: [unclosed\n",
        },
    )
    res = _run(root)
    assert res["failed"]
    found = {Path(f["path"]).name: f["netdevs"] for f in res["foreign"]}
    assert found == {
        "10-glob.yaml": ["enp1s0f0np0", "enp1s0f1np1"],
        "20-bond.yaml": ["enP2p1s0f0np0"],
        "30-vlan.yaml": ["enP2p1s0f1np1"],
    }


def test_take_over_checks_then_moves_and_keeps_older_backups(tmp_path):
    root = _tree(tmp_path, **{"etc/netplan/40-cx7.yaml": CX7, "etc/sparkfab/backup/netplan/40-cx7.yaml": "old\n"})
    check = _run(root, take_over=True, _ansible_check_mode=True, _ansible_diff=True)
    assert check["changed"] and check["diff"][0]["before"] == CX7 and check["diff"][0]["after"] == ""
    assert (root / "etc/netplan/40-cx7.yaml").exists()
    done = _run(root, take_over=True)
    assert done["changed"] and not (root / "etc/netplan/40-cx7.yaml").exists()
    assert done["moved"] == [
        {"from": f"{root}/etc/netplan/40-cx7.yaml", "to": f"{root}/etc/sparkfab/backup/netplan/40-cx7.yaml.1"}
    ]
    assert (root / "etc/sparkfab/backup/netplan/40-cx7.yaml.1").read_text() == CX7
    assert (root / "etc/sparkfab/backup/netplan/40-cx7.yaml").read_text() == "old\n"
    assert _run(root, take_over=True)["changed"] is False


def test_files_outside_etc_are_refused_even_with_take_over(tmp_path):
    root = _tree(tmp_path, **{"run/netplan/90-cloud.yaml": CX7, "lib/netplan/90-cloud.yaml": MGMT})
    res = _run(root, take_over=True)
    assert res["failed"] and "run/netplan/90-cloud.yaml is not under /etc/netplan and cannot be moved" in res["msg"]
    # /run shadows /lib for one file name, as netplan reads them
    assert [Path(f["path"]).parts[-3:] for f in res["foreign"]] == [("run", "netplan", "90-cloud.yaml")]


DRIVER = "network:\n  ethernets:\n    cx7:\n      match: {driver: mlx5_core}\n      addresses: [10.9.9.9/24]\n"
MAC = "network:\n  ethernets:\n    port:\n      match: {macaddress: '58:a2:e1:00:00:01'}\n      mtu: 1500\n"


def _sysfs(root: Path, dev: str, mac: str, driver: str) -> None:
    base = root / "sys/class/net" / dev
    (base / "device").mkdir(parents=True)
    (base / "address").write_text(mac + "\n")
    (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True, exist_ok=True)
    (base / "device/driver").symlink_to(root / "sys/bus/pci/drivers" / driver)


def test_a_match_by_driver_or_mac_counts_unless_the_host_proves_otherwise(tmp_path):
    """`match: {driver: mlx5_core}` names no netdev, yet networkd applies it to every ConnectX-7
    port; without sysfs to say otherwise it counts as touching every fabric netdev."""
    root = _tree(tmp_path, **{"etc/netplan/10-cx7.yaml": DRIVER, "etc/netplan/20-mac.yaml": MAC})
    found = {Path(f["path"]).name: f["netdevs"] for f in _run(root)["foreign"]}
    assert found == {"10-cx7.yaml": sorted(FABRIC), "20-mac.yaml": sorted(FABRIC)}
    # the host's own facts: the ConnectX-7 ports are mlx5_core; one of them has the MAC address
    for i, dev in enumerate(FABRIC):
        _sysfs(root, dev, f"58:a2:e1:00:00:0{i}", "mlx5_core")
    found = {Path(f["path"]).name: f["netdevs"] for f in _run(root)["foreign"]}
    assert found == {"10-cx7.yaml": sorted(FABRIC), "20-mac.yaml": [FABRIC[1]]}


def test_a_match_the_host_disproves_is_left_alone(tmp_path):
    other = DRIVER.replace("mlx5_core", "r8169")
    root = _tree(tmp_path, **{"etc/netplan/10-eth.yaml": other, "etc/netplan/20-mac.yaml": MAC.replace("01", "99")})
    for i, dev in enumerate(FABRIC):
        _sysfs(root, dev, f"58:a2:e1:00:00:0{i}", "mlx5_core")
    res = _run(root)
    assert res["changed"] is False and res["foreign"] == []


def test_networkd_takes_the_foreign_match_file_first(tmp_path):
    """Why a match by driver is dangerous, in networkd's own terms: netplan writes such a
    definition as 10-netplan-<id>.network with Driver=, which sorts before sparkfab's
    10-netplan-<netdev>.network; networkd uses the first .network file that matches a link."""
    import shutil

    if not shutil.which("netplan"):
        import pytest

        pytest.skip("netplan is not installed (scripts/setup.sh)")
    ours = "network:\n  version: 2\n  ethernets:\n    enp1s0f0np0:\n      addresses: [192.168.100.1/24]\n"
    root = _tree(tmp_path, **{"etc/netplan/10-cx7.yaml": DRIVER, "etc/netplan/60-sparkfab.yaml": ours})
    for f in (root / "etc/netplan").iterdir():
        f.chmod(0o600)
    res = subprocess.run(["netplan", "generate", "--root-dir", str(root)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    units = sorted(p.name for p in (root / "run/systemd/network").glob("*.network"))
    assert units == ["10-netplan-cx7.network", "10-netplan-enp1s0f0np0.network"]
    assert "Driver=mlx5_core" in (root / "run/systemd/network/10-netplan-cx7.network").read_text()
    assert _run(root)["failed"]  # and apply refuses it before networkd can pick it


PLAN = "network:\n  version: 2\n  ethernets:\n    enp1s0f0np0:\n      addresses: [192.168.100.1/24]\n      mtu: 9000\n"


def _bundle(text: str) -> str:
    spec = {"content": text, "mode": "0600", "kind": "netplan"}
    return json.dumps({"files": {"/etc/netplan/60-sparkfab.yaml": spec}})


def test_check_previews_then_converge_installs_once(tmp_path):
    import shutil

    import pytest

    if not shutil.which("netplan"):
        pytest.skip("netplan is not installed (scripts/setup.sh)")
    root = _tree(tmp_path, **{"etc/netplan/50-cloud-init.yaml": MGMT})
    check = _run(root, bundle_text=_bundle(PLAN), instance="glm")
    assert check["netplan_differs"] and check["engine_running"] is False and check["changed"] is False
    dry = _run(root, stage="converge", bundle_text=_bundle(PLAN), _ansible_check_mode=True, _ansible_diff=True)
    assert dry["apply"] and dry["installed"] == ["/etc/netplan/60-sparkfab.yaml"] and dry["diff"][0]["after"] == PLAN
    assert not (root / "etc/netplan/60-sparkfab.yaml").exists()
    done = _run(root, stage="converge", bundle_text=_bundle(PLAN))
    assert done["apply"] and (root / "etc/netplan/60-sparkfab.yaml").read_text() == PLAN
    assert (root / "etc/netplan/60-sparkfab.yaml").stat().st_mode & 0o777 == 0o600
    again = _run(root, stage="converge", bundle_text=_bundle(PLAN))
    assert again["changed"] is False and again["apply"] is False and again["installed"] == []
    assert _run(root, bundle_text=_bundle(PLAN))["netplan_differs"] is False


def test_a_file_netplan_refuses_is_not_installed(tmp_path):
    import shutil

    import pytest

    if not shutil.which("netplan"):
        pytest.skip("netplan is not installed (scripts/setup.sh)")
    bad = PLAN.replace("mtu: 9000", "mtu: lots")
    res = _run(tmp_path, stage="converge", bundle_text=_bundle(bad))
    assert res["failed"] and res["msg"].startswith("netplan generate refuses /etc/netplan/60-sparkfab.yaml: ")
    assert not (tmp_path / "etc/netplan/60-sparkfab.yaml").exists()


def test_the_live_fabric_is_compared_with_the_plan(tmp_path):
    """A netdev this machine does not have lacks its address, its MTU and its route: each named."""
    res = _run(
        tmp_path,
        stage="converge",
        netdevs=["sf-nonexistent0"],
        addresses=[{"dev": "sf-nonexistent0", "address": "192.168.100.1/24"}],
        mtu=9000,
        routes=[{"to": "192.168.104.1", "via": "192.168.100.2", "dev": "sf-nonexistent0"}],
        _ansible_check_mode=True,
    )
    assert res["drift"] == [
        "sf-nonexistent0: no 192.168.100.1/24",
        "sf-nonexistent0: MTU not 9000",
        "no route to 192.168.104.1 via 192.168.100.2",
    ]
    assert res["apply"] and res["installed"] == []


def test_the_record_for_reset_is_written_once(tmp_path):
    first = _run(tmp_path, record_before=True, netdevs=["lo"])
    text = (tmp_path / "etc/sparkfab/before").read_text()
    assert first["changed"] and text.startswith("# sparkfab: values before its first apply")
    assert "mtu lo 65536\n" in text and "sysctl net.ipv4.ip_forward " in text
    again = _run(tmp_path, record_before=True, netdevs=["lo"])
    assert again["changed"] is False and (tmp_path / "etc/sparkfab/before").read_text() == text


def test_a_differing_file_under_a_running_engine_is_refused_unless_forced(tmp_path):
    """The engine's pid file names a live process (this test's): the check refuses the differing
    file, and says nothing with force or when the file is already the planned one."""
    import os

    (tmp_path / "run/sparkfab").mkdir(parents=True)
    (tmp_path / "run/sparkfab/glm.pid").write_text(f"{os.getpid()}\n")
    refused = _run(tmp_path, bundle_text=_bundle(PLAN), instance="glm")
    assert refused["failed"] and refused["engine_running"] and refused["netplan_differs"]
    assert refused["msg"].startswith("the engine of glm runs on this host: re-applying netplan changes the RoCE")
    forced = _run(tmp_path, bundle_text=_bundle(PLAN), instance="glm", force=True)
    assert "failed" not in forced and forced["engine_running"] and forced["netplan_differs"]
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "etc/netplan/60-sparkfab.yaml").write_text(PLAN)
    (tmp_path / "etc/netplan/60-sparkfab.yaml").chmod(0o600)
    same = _run(tmp_path, bundle_text=_bundle(PLAN), instance="glm")
    assert "failed" not in same and same["engine_running"] and not same["netplan_differs"]


def test_a_refusal_anywhere_stops_converge_on_every_host_before_it_writes(tmp_path):
    refused = {"spark-a": "foreign netplan file: /etc/netplan/40-cx7.yaml configures enp1s0f1np1", "spark-b": None}
    mine = _run(tmp_path, stage="converge", bundle_text=_bundle(PLAN), refused=refused, host="spark-a")
    assert mine["failed"] and mine["msg"] == refused["spark-a"]
    other = _run(tmp_path, stage="converge", bundle_text=_bundle(PLAN), refused=refused, host="spark-b")
    assert other["failed"] and other["msg"] == "nothing changed: spark-a refused (see its message)"
    assert "foreign netplan file" not in other["msg"]  # the CLI tells a refusal by its words
    assert not (tmp_path / "etc/netplan").exists()
    none = _run(tmp_path, stage="converge", bundle_text="", refused={"spark-a": None, "spark-b": None}, host="spark-b")
    assert "failed" not in none


def test_the_live_fabric_found_in_place_is_no_drift(tmp_path):
    """In a network namespace of its own (unshare -n -m), with a netdev (a veth) that has the planned address,
    MTU and routes (a host route and a prefix): nothing is due; each one taken away is named."""
    import shutil

    import pytest

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a network namespace of its own")
    args = {
        "netdevs": ["sf0"],
        "root": str(tmp_path),
        "stage": "converge",
        "addresses": [{"dev": "sf0", "address": "192.168.100.1/24"}],
        "mtu": 9000,
        "routes": [
            {"to": "192.168.104.1", "via": "192.168.100.2", "dev": "sf0"},
            {"to": "192.168.108.0/24", "via": "192.168.100.3", "dev": "sf0"},
        ],
        "_ansible_check_mode": True,
    }
    # the converge stage compares, and so does the check (its `pending` lets a host with nothing to do end)
    files = []
    for stage in ("converge", "check"):
        f = tmp_path / f"{stage}.json"
        f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {**args, "stage": stage}}))
        files.append(f)
    setup = (
        "ip link add sf0 mtu 9000 type veth peer name sf1 && ip link set sf1 up && ip link set sf0 up"
        " && ip addr add 192.168.100.1/24 dev sf0"
        " && ip route add 192.168.104.1 via 192.168.100.2 dev sf0"
        " && ip route add 192.168.108.0/24 via 192.168.100.3 dev sf0"
    )
    run = "; echo ---; ".join(f"{sys.executable} {MODULE} {f}" for f in files)
    took = "ip route del 192.168.108.0/24 && ip route add 192.168.108.0/24 via 192.168.100.4 dev sf0"
    # sysfs shows the netdevs of the namespace that mounted it: a mount of its own (unshare -m)
    script = f"set -e; mount -t sysfs sysfs /sys; {setup}; {run}; echo ---; {took}; ip link set sf0 mtu 1500; {run}"
    res = subprocess.run(["unshare", "-n", "-m", "sh", "-c", script], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    first, first_check, second, second_check = (json.loads(x) for x in res.stdout.split("---"))
    assert first["drift"] == first_check["drift"] == [] and first["apply"] is first_check["pending"] is False
    lacking = ["sf0: MTU not 9000", "no route to 192.168.108.0/24 via 192.168.100.3"]
    assert second["drift"] == second_check["drift"] == lacking and second["apply"] is second_check["pending"] is True
