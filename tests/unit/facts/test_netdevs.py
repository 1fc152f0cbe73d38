"""The netdev facts, each from what its command printed: captured from a lab Spark and from this
machine's own `ip`, read through the fact's parser as the checks ask it."""

from __future__ import annotations

import json
import subprocess

import pytest

from sparkfab.facts import netdevs
from sparkfab.facts.netdevs import ADDRESSES, DRIVERS, LINKS, ROUTE, SPEEDS
from tests.conftest import REPO
from tests.doubles.host import Answer, FakeHost, ip_addr

CAPTURED = REPO / "tests/data/captured"


def _on(command: str, stdout: str, rc: int = 0) -> FakeHost:
    return FakeHost(answers={command: Answer(rc, stdout, "" if rc == 0 else "boom\n")})


def test_links_from_a_captured_spark_and_from_this_machine():
    shipped = (CAPTURED / "ip-link-shipped-pair-spark-b.json").read_text()
    got = LINKS.of(_on(LINKS.command(), shipped))
    twins = {name: link for name, link in got.items() if name.endswith("np1")}
    assert set(twins) == {"enp1s0f1np1", "enP2p1s0f1np1"} and all(t.up and t.carrier for t in twins.values())
    assert all(len(t.address.split(":")) == 6 for t in twins.values())  # lldpd's port id as shipped
    mine = LINKS.of(FakeHost(answers={LINKS.command(): Answer(0, _local(LINKS.command()))}))
    assert mine["lo"].up and mine["lo"].mtu == 65536


def test_links_of_every_shape_and_a_failing_ip():
    cases = '[{"ifname": "p0", "flags": ["BROADCAST", "NO-CARRIER", "UP"], "mtu": 9000, "operstate": "DOWN"},'
    cases += ' {"ifname": "p1", "flags": ["UP", "LOWER_UP"], "operstate": "UP"}, {"no": "name"}]'
    got = netdevs.links(cases)
    assert (got["p0"].up, got["p0"].carrier, got["p0"].mtu) == (True, False, 9000)
    assert (got["p1"].carrier, got["p1"].mtu) == (True, None) and set(got) == {"p0", "p1"}
    assert netdevs.links("") == {}
    with pytest.raises(ValueError):
        netdevs.links('{"not": "a list"}')
    with pytest.raises(RuntimeError, match=r"ip -j link show failed \(exit 1\): boom"):
        LINKS.of(_on(LINKS.command(), "", rc=1))


def test_addresses_as_address_and_prefix_sorted():
    text = ip_addr(enp1s0f0np0=["192.168.100.2/24", "10.0.0.1/31"], lo=["127.0.0.1/8"])
    assert ADDRESSES.of(_on(ADDRESSES.command(), text)) == {
        "enp1s0f0np0": ["10.0.0.1/31", "192.168.100.2/24"],
        "lo": ["127.0.0.1/8"],
    }
    mine = ADDRESSES.of(FakeHost(answers={ADDRESSES.command(): Answer(0, _local(ADDRESSES.command()))}))
    assert "127.0.0.1/8" in mine["lo"]


def test_speeds_run_on_this_machine_and_a_netdev_without_one():
    names = ["lo", "no-such-netdev"]
    got = SPEEDS.of(FakeHost(answers={SPEEDS.command(names): Answer(0, _local(SPEEDS.command(names)))}), names)
    assert got == {"lo": "-", "no-such-netdev": "-"}  # loopback reports no speed (EINVAL)
    assert SPEEDS.parse(Answer(0, "p0 200000\np1 -\ngarbage\n")) == {"p0": 200000, "p1": "-"}


def test_drivers_and_macs_as_sysfs_gives_them():
    names = ["lo"]
    got = DRIVERS.of(FakeHost(answers={DRIVERS.command(names): Answer(0, _local(DRIVERS.command(names)))}), names)
    assert got == {"lo": {"macaddress": "00:00:00:00:00:00"}}  # no driver behind loopback
    assert DRIVERS.parse(Answer(0, "p0 aa:bb:cc:dd:ee:ff mlx5_core\np1 - -\n")) == {
        "p0": {"macaddress": "aa:bb:cc:dd:ee:ff", "driver": "mlx5_core"},
        "p1": {},
    }


def test_a_route_lookup_and_none():
    got = ROUTE.of(
        FakeHost(answers={ROUTE.command("127.0.0.1"): Answer(0, _local(ROUTE.command("127.0.0.1")))}), "127.0.0.1"
    )
    assert got["dev"] == "lo"
    assert ROUTE.parse(Answer(2, "", "RTNETLINK answers: Network is unreachable\n")) == {}
    assert (
        ROUTE.parse(Answer(0, json.dumps([{"dst": "10.0.0.2", "gateway": "10.0.0.1", "dev": "x"}])))["gateway"]
        == "10.0.0.1"
    )
    assert ROUTE.command("10.0.0.2; reboot") == "ip -j route get '10.0.0.2; reboot'"


def _local(command: str) -> str:
    """What `command` prints on this machine (read only: ip, sysfs)."""
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False).stdout
