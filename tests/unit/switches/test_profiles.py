"""Each switch OS's LLDPDU, TLV by TLV, as its devices send it, read by verify and discover as a
site's Sparks would hear it: RouterOS on a bridge port (any bridge name, any identity), Cumulus,
SONiC (an alias, subtype local) and generic, on every switched example's layout."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkfab.discover import HostView, derive
from sparkfab.facts.neighbours import Neighbour
from sparkfab.lab.spec import shipped_hostname, switch_frames
from sparkfab.lldp import frame as lf
from sparkfab.resolve import load_plan
from sparkfab.switches import catalog, profiles
from sparkfab.verify import lldp
from sparkfab.verify.result import PASS
from tests.conftest import REPO

SWITCHED = ["switch8-crs804-200.yml", "switch8-crs812-100.yml", "switch16-crs804-100.yml"]
OSES = ["routeros", "cumulus", "sonic", "generic"]


def _variant(tmp_path: Path, name: str, os: str, identity: str) -> str:
    """An example's layout with its switch running `os` and announcing `identity`."""
    doc = yaml.safe_load((REPO / "inventory" / name).read_text())
    block = doc["all"]["vars"]["sparkfab"]
    for sw in block["switches"].values():
        sw["os"], sw["lldp_name"] = os, identity
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _heard(plan, name: str, bridge: str | None) -> dict[str, Neighbour]:
    """What each switch port sends, decoded from its octets: {switch port's name: neighbour}."""
    out = {}
    for line in switch_frames(plan, name):
        port, du = line.split(" ")
        frame = lf.decode(bytes.fromhex(du))
        if bridge is not None and frame.port_id.startswith(b"bridge-fabric/"):  # another bridge's name
            frame = lf.Frame(**{**frame.__dict__, "port_id": bridge.encode() + frame.port_id[len(b"bridge-fabric") :]})
        out[port] = Neighbour.of_frame(frame)
    return out


@pytest.mark.parametrize("os", OSES)
@pytest.mark.parametrize("name", SWITCHED)
@pytest.mark.parametrize("bridge", [None, "bridge", "br-sparks"])
def test_verify_and_discover_read_each_os_as_it_announces(tmp_path, name, os, bridge):
    if bridge is not None and os != "routeros":
        pytest.skip("only RouterOS names a bridge port by its bridge")
    plan = load_plan(_variant(tmp_path, name, os, "core-7"))
    sw = plan.switches[0].name
    frames = _heard(plan, sw, bridge)
    views = {}
    for h in plan.hosts:
        me = shipped_hostname(plan.cluster, h.name)
        seen = {
            i.netdev: [Neighbour(me, o.netdev, f"mac-{h.name}"), frames[i.switch_port_id]]
            for i in h.ifaces
            for o in h.ifaces
            if o.netdev != i.netdev and o.port == i.port
        }
        rows = lldp.check_host(plan, h, seen, {me, f"mac-{h.name}"})
        assert {r.status for r in rows} == {PASS}, [(r.subject, r.actual, r.detail) for r in rows]
        views[h.name] = HostView(
            h.name, f"addr-{h.name}", hostname=me, chassis={me, f"mac-{h.name}"}, ports=seen, fabric=sorted(seen)
        )
    known = lldp.known_switches(plan)
    found = derive(views, [h.name for h in plan.hosts], known, plan.link_speed)
    planned = sorted(
        sorted(c)
        for c in yaml.safe_load(Path(_variant(tmp_path, name, os, "core-7")).read_text())["all"]["vars"]["sparkfab"][
            "cables"
        ]
    )
    assert found.odd == [] and sorted(sorted(c) for c in found.cables) == planned


def test_routeros_frames_are_what_its_devices_send():
    """Chassis a MAC, Port ID subtype interface name `<bridge>/<port>`, TTL 120, no Port
    Description, its identity, "MikroTik RouterOS ..." and Bridge, Router (the captures cited in
    `switchos`)."""
    model = catalog.MODELS["CRS804"]
    at = profiles.Announcer("MikroTik", "04:f4:1c:00:00:01", "bridge")
    frame = lf.decode(lf.lldpdu(profiles.profile("routeros").frame(model, 1, 2, 2, at)))
    assert (frame.chassis_subtype, frame.chassis_text) == (lf.CHASSIS_MAC, "04:f4:1c:00:00:01")
    assert (frame.port_subtype, frame.port_text, frame.ttl) == (lf.PORT_IFNAME, "bridge/qsfp56-dd-1-5", 120)
    assert frame.port_descr is None and frame.sys_name == b"MikroTik"
    assert frame.sys_descr.startswith(b"MikroTik RouterOS 7.") and frame.caps == (0x14, 0x14)


def test_sonic_announces_its_alias_with_subtype_local():
    model = catalog.generic(64, 800)
    at = profiles.Announcer("sonic", "02:00:00:00:00:02")
    frame = lf.decode(lf.lldpdu(profiles.profile("sonic").frame(model, 3, 2, 4, at)))
    assert (frame.port_subtype, frame.port_text, frame.port_descr) == (lf.PORT_LOCAL, "etp3b", b"Ethernet18")
    assert profiles.guess("etp3b") == "sonic" and profiles.profile("sonic").place(model, "etp3b", {3: 4}) == (3, 2)


@pytest.mark.parametrize(
    "port_id,os",
    [
        ("bridge/qsfp56-dd-1-5", "routeros"),
        ("bridge-fabric/qsfp56-1-1", "routeros"),
        ("qsfp56-dd-2-3", "routeros"),
        ("swp1s0", "cumulus"),
        ("etp12", "sonic"),
        ("p3s1", "generic"),
    ],
)
def test_a_switch_no_inventory_names_is_guessed_from_its_port_ids(port_id, os):
    assert profiles.guess(port_id) == os


def test_the_reviews_f1_feed_passes():
    """fidelity-2026-12-06 §6: spark-02 on sw1:1/2 hears `bridge/qsfp56-dd-1-5` from MikroTik."""
    plan = load_plan(str(REPO / "inventory/switch8-crs804-200.yml"))
    h = plan.host("spark-02")
    seen = {"enp1s0f1np1": [Neighbour("MikroTik", "bridge/qsfp56-dd-1-5", "04:f4:1c:00:00:01", "")]}
    rows = {r.subject.split()[0]: r for r in lldp.check_host(plan, h, seen)}
    assert rows["enp1s0f1np1"].status == PASS


def test_verify_knows_a_far_spark_by_what_it_says_of_itself_or_by_the_plan_when_not_asked():
    """ring4 named as shipped: a far Spark that was asked is known by its own LLDP name; one a
    --limit left out by the plan's cable (a name no asked Spark claims)."""
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    h = plan.hosts[0]
    i = next(x for x in h.ifaces if x.peer_host)
    far = Neighbour("spark-77aa", i.peer_netdev or "", "cc:cc")
    seen = {i.netdev: [far]}
    asked = {i.peer_host: frozenset({"spark-77aa", "cc:cc"}), h.name: frozenset({"spark-0001"})}
    row = next(r for r in lldp.check_host(plan, h, seen, None, asked) if r.subject.startswith(i.netdev))
    assert row.status == PASS
    impostor = {h.name: frozenset({"spark-0001"}), "other": frozenset({"spark-77aa"})}  # another claims it
    row = next(r for r in lldp.check_host(plan, h, seen, None, impostor) if r.subject.startswith(i.netdev))
    assert row.status != PASS
    limited = {h.name: frozenset({"spark-0001"})}  # the far one not asked
    row = next(r for r in lldp.check_host(plan, h, seen, None, limited) if r.subject.startswith(i.netdev))
    assert row.status == PASS
