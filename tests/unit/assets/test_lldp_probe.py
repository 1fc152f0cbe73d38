"""The frame relay a Spark runs for discover: what it prints of what it hears (the sockets
themselves are exercised against the real lldpd in tests/slow/test_lldp_real_lldpd.py)."""

from __future__ import annotations

import json

from sparkfab.assets import lldp_probe

OWN, OTHER = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def _frame(source: bytes, tail: bytes = b"") -> bytes:
    return lldp_probe.NEAREST_BRIDGE + source + b"\x88\xcc" + b"\x02\x07\x04" + tail


def test_own_outgoing_and_repeated_frames_are_not_printed_and_a_flood_is_counted(capsys):
    heard = lldp_probe.Heard({OWN}, limit=2)
    heard.take(_frame(OWN), ("eth0", 0x88CC, 2, 1, OWN))  # its own twin
    heard.take(_frame(OTHER), ("eth0", 0x88CC, lldp_probe.PACKET_OUTGOING, 1, OTHER))  # what it sent
    for i in range(5):
        heard.take(_frame(OTHER, bytes([i])), ("eth0", 0x88CC, 2, 1, OTHER))
    heard.take(_frame(OTHER, b"\x00"), ("eth0", 0x88CC, 2, 1, OTHER))  # the same frame again
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["frame"] for p in printed] == [_frame(OTHER, bytes([i])).hex() for i in range(2)]
    assert heard.netdevs == {"eth0"} and heard.dropped == {"eth0": 3}


def test_a_frame_is_sent_from_the_netdevs_own_mac():
    class Sock:
        def getsockname(self):
            return ("eth0", 0x88CC, 0, 1, OWN)

    frame = lldp_probe.frame_for(Sock(), b"\x00\x00")
    assert frame[:14] == lldp_probe.NEAREST_BRIDGE + OWN + b"\x88\xcc" and len(frame) == 60
