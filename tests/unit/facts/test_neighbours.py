"""The LLDP fact from what lldpcli printed on lab Sparks whose PCIe twins share one wire: every
neighbour each netdev heard (lldpcli's one-item dict and many-item list alike), the host's own
chassis, and the carrier of the netdevs beside them."""

from __future__ import annotations

from sparkfab.facts.neighbours import NEIGHBOURS, Neighbour, local_chassis, neighbours
from tests.conftest import REPO
from tests.doubles.host import Answer, FakeHost, ip_link

CAPTURED = REPO / "tests/data/captured"


def test_every_neighbour_of_a_twin_on_one_wire_is_kept():
    heard = neighbours((CAPTURED / "lldpcli-one-wire-pair-spark-a.json").read_text())
    systems = {n.system for n in heard["enp1s0f1np1"]}
    assert systems == {"spark-a", "spark-b"} and len(heard["enp1s0f1np1"]) == 3  # own twin and both far twins
    assert all(isinstance(n, Neighbour) and n.chassis for n in heard["enp1s0f1np1"])


def test_a_spark_as_shipped_announces_macs_and_its_names_in_the_description():
    heard = neighbours((CAPTURED / "lldpcli-shipped-pair-spark-a.json").read_text())
    far = [n for ns in heard.values() for n in ns if n.system == "spark-b"]
    assert far and all(len(n.port.split(":")) == 6 and n.descr.startswith("en") for n in far)


def test_one_neighbour_is_a_dict_in_lldpcli_and_a_list_here():
    heard = neighbours((CAPTURED / "lldpcli-one-neighbour.json").read_text())
    assert [len(v) for v in heard.values()] == [1]
    assert neighbours("") == {} and neighbours('{"lldp": {}}') == {}


def test_the_own_chassis_is_its_name_and_id():
    assert local_chassis((CAPTURED / "lldpcli-chassis-spark-a.json").read_text()) >= {"spark-a"}
    assert local_chassis("") == set()


def test_the_fact_joins_carrier_chassis_and_neighbours_and_says_when_lldpd_is_silent():
    text = (CAPTURED / "lldpcli-one-wire-pair-spark-a.json").read_text()
    chassis = (CAPTURED / "lldpcli-chassis-spark-a.json").read_text()
    listing = ip_link(enp1s0f1np1={}, enP2p1s0f1np1={"carrier": False})
    host = FakeHost(answers={NEIGHBOURS.command(): Answer(0, f"{listing}\n@@\n{chassis}\n@@\n{text}")})
    got = NEIGHBOURS.of(host)
    assert got.answered and got.carrier == {"enp1s0f1np1"} and "spark-a" in got.own
    assert set(got.ports) == {"enp1s0f1np1", "enP2p1s0f1np1"}
    silent = NEIGHBOURS.of(FakeHost(answers={NEIGHBOURS.command(): Answer(1, "", "lldpd not running")}))
    assert not silent.answered and silent.carrier is None
    unreadable = NEIGHBOURS.parse(Answer(0, f"not json\n@@\n{chassis}\n@@\n{text}"))
    assert unreadable.answered and unreadable.carrier is None  # the checks then take every netdev


def _pairs(seen):
    return {k: [(n.system, n.port) for n in v] for k, v in seen.items()}


def test_lldp_neighbours_list_form():
    seen = neighbours((CAPTURED / "lldpcli-ring-spark329f.json").read_text())
    assert _pairs(seen) == {
        "enp1s0f0np0": [("spark-3d38", "enp1s0f1np1")],
        "enp1s0f1np1": [("spark-355d", "enp1s0f1np1")],
        "enP2p1s0f0np0": [("spark-3d38", "enP2p1s0f1np1")],
        "enP2p1s0f1np1": [("spark-355d", "enP2p1s0f1np1")],
    }
    assert seen["enp1s0f0np0"][0].chassis == "4a:a3:fb:04:94:d4"


def test_lldp_neighbours_single_interface_is_a_dict():
    seen = neighbours((CAPTURED / "lldpcli-one-neighbour.json").read_text())
    assert _pairs(seen) == {"enp1s0f1np1": [("sw1", "p4s1r0")]}


def test_the_local_chassis_is_what_the_twins_hear_from_each_other():
    text = '{"local-chassis": {"chassis": {"spark-a": {"id": {"type": "mac", "value": "aa:bb"}}}}}'
    assert local_chassis(text) == {"spark-a", "aa:bb"}


def test_lldpds_raw_0x1f_inside_a_json0_string_is_read():
    """lldpd before 1.0.22 writes byte 0x1F raw in json0 (captured from 1.0.16): still a listing."""
    [(_netdev, [n])] = neighbours((CAPTURED / "lldpcli-0x1f-json0.json").read_text()).items()
    assert (n.system, n.port, n.descr) == ("sw\x1f2", "p\x1fort\x01", "unit\x1fsep")
