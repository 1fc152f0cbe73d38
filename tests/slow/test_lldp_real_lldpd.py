"""sparkfab's LLDPDUs against the real lldpd (the program on every Spark and Cumulus/SONiC switch):
each switch OS's frame, sent on a veth, is what lldpd lists through `lldpcli -f json0`, as
sparkfab's parser reads it; lldpd's own frames, heard by sparkfab's relay, decode as lldpd meant
them (a Spark as shipped: its MAC as port id, the netdev's name as description); a hostile
frame's listing stays readable where `-f json`'s is not."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time

import pytest

from sparkfab.facts.neighbours import Neighbour, Unreadable, neighbours
from sparkfab.lldp import frame as lf
from sparkfab.switches import catalog, profiles
from tests.conftest import REPO
from tests.helpers.wire import lldpd_wire

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

CAPTURED = REPO / "tests" / "data" / "captured"


@pytest.mark.parametrize("os_name", profiles.OS_NAMES)
def test_lldpd_lists_each_switch_os_frame_as_sparkfab_reads_it(os_name):
    model = catalog.MODELS["CRS804"] if os_name == "routeros" else catalog.generic(32, 400)
    at = profiles.Announcer("core-7", "02:11:22:33:44:55", "bridge-fabric" if os_name == "routeros" else None)
    built = profiles.profile(os_name).frame(model, 2, 2, 2, at)
    with lldpd_wire() as wire:
        wire.send([lf.lldpdu(built)])
        heard = neighbours(wire.neighbours_json0())
    assert heard == {wire.near_if: [Neighbour.of_frame(built)]}


def test_the_relay_hears_lldpds_own_frames_as_shipped():
    with lldpd_wire() as wire, cf.ThreadPoolExecutor(1) as pool:
        listening = pool.submit(wire.relay, {"listen": [wire.far_if], "seconds": 10, "linger": 0.2})
        time.sleep(0.5)
        wire.lldpcli("update")  # lldpd announces at start and every 30 s: one now, as discover asks
        lines = listening.result()
    frames = [lf.decode_ethernet(bytes.fromhex(str(x["frame"]))) for x in lines if "frame" in x]
    assert frames, lines
    source, frame = frames[0]
    assert frame.port_subtype == lf.PORT_MAC and frame.port_text == ":".join(f"{b:02x}" for b in source)
    assert frame.text(frame.port_descr) == wire.near_if and frame.ttl == 120


def test_a_hostile_frames_listing_is_readable_in_json0_only():
    hostile = lf.Frame(
        lf.CHASSIS_MAC,
        bytes.fromhex("020000000001"),
        lf.PORT_LOCAL,
        b'p"o\nrt: {a: b}\x1b[31m|`rm -rf`',
        120,
        b"desc \x1b[2J\xe2\x80\xae evil",
        b'sw"1\\\n- x: y',
        b"\xff\xfe <script>",
    )
    with lldpd_wire() as wire:
        wire.send([lf.lldpdu(hostile)])
        as_json = wire.lldpcli("-f", "json", "show", "neighbors")
        heard = neighbours(wire.neighbours_json0())
    with pytest.raises(Unreadable):
        neighbours(as_json)
    [n] = heard[wire.near_if]
    assert (n.system, n.port, n.descr) == (
        'sw"1\\\n- x: y',
        'p"o\nrt: {a: b}\x1b[31m|`rm -rf`',
        "desc \x1b[2J\u202e evil",
    )


def test_a_raw_0x1f_in_lldpds_json0_is_read():
    """lldpd before 1.0.22 writes byte 0x1F raw inside a json0 string (every other control byte
    as \\u00XX): the listing is still read, the byte kept."""
    unit = lf.Frame(lf.CHASSIS_MAC, bytes.fromhex("020000000002"), lf.PORT_LOCAL, b"p\x1fort\x01", 120,
                    b"unit\x1fsep", b"sw\x1f2", b"descr")  # fmt: skip
    with lldpd_wire() as wire:
        wire.send([lf.lldpdu(unit)])
        listing = wire.neighbours_json0()
    [n] = neighbours(listing)[wire.near_if]
    assert (n.system, n.port, n.descr) == ("sw\x1f2", "p\x1fort\x01", "unit\x1fsep")


def test_the_captured_hostile_listings_read_as_they_did():
    """lldpd 1.0.16's own output for that frame (2026-12-06): `-f json` is not JSON, json0 is."""
    with pytest.raises(Unreadable):
        neighbours((CAPTURED / "lldpcli-hostile-json.txt").read_text())
    [(_netdev, [n])] = neighbours((CAPTURED / "lldpcli-hostile-json0.json").read_text()).items()
    assert n.system == 'sw"1\\\n- x: y' and n.port.startswith('p"o\nrt:')
    [(_netdev, [n])] = neighbours((CAPTURED / "lldpcli-0x1f-json0.json").read_text()).items()
    assert (n.system, n.port) == ("sw\x1f2", "p\x1fort\x01")
