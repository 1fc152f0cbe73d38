"""The LLDPDU codec: what sparkfab builds is what it reads back, and whatever octets a neighbour
sends end as a Frame or a FrameError, never another exception."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkfab.lldp import frame as lf

TEXT = st.binary(max_size=255)


@st.composite
def frames(draw: st.DrawFn) -> lf.Frame:
    return lf.Frame(
        draw(st.integers(1, 7)),
        draw(st.binary(min_size=1, max_size=255)),
        draw(st.integers(1, 7)),
        draw(st.binary(min_size=1, max_size=255)),
        draw(st.integers(0, 65535)),
        draw(st.none() | TEXT),
        draw(st.none() | TEXT),
        draw(st.none() | TEXT),
        draw(st.none() | st.tuples(st.integers(0, 65535), st.integers(0, 65535))),
        tuple(draw(st.lists(st.ip_addresses().map(str), max_size=3))),
        tuple(draw(st.lists(st.tuples(st.integers(9, 127), st.binary(max_size=64)), max_size=3))),
    )


@given(frames())
@settings(max_examples=300)
def test_a_frame_reads_back_as_it_was_built(f: lf.Frame):
    assert lf.decode(lf.lldpdu(f)) == f
    source, again = lf.decode_ethernet(lf.encode(f, b"\x02\x00\x00\x00\x00\x09"))
    assert source == b"\x02\x00\x00\x00\x00\x09" and again == f


@given(st.binary(max_size=600))
@settings(max_examples=500)
def test_any_octets_are_a_frame_or_a_frame_error(data: bytes):
    try:
        f = lf.decode(data)
    except lf.FrameError:
        return
    assert isinstance(f.port_text, str) and isinstance(f.text(f.sys_name), str)


@given(frames(), st.integers(0, 200))
def test_a_truncated_lldpdu_is_refused_with_why(f: lf.Frame, cut: int):
    du = lf.lldpdu(f)
    cut = min(cut, len(du) - 1)
    with pytest.raises(lf.FrameError):
        lf.decode(du[:cut])


@pytest.mark.parametrize(
    "du,why",
    [
        (lf._tlv(lf.PORT, b"\x05p0") + lf._tlv(lf.CHASSIS, b"\x04abcdef") + lf._tlv(lf.TTL, b"\x00\x78"), "first TLVs"),
        (lf._tlv(lf.CHASSIS, b"\x04") + lf._tlv(lf.PORT, b"\x05p0") + lf._tlv(lf.TTL, b"\x00\x78"), "Chassis ID of 0"),
        (lf._tlv(lf.CHASSIS, b"\x04ab") + lf._tlv(lf.PORT, b"\x05p0") + lf._tlv(lf.TTL, b"\x78"), "TTL of 1"),
        (struct.pack("!H", 1 << 9 | 40) + b"\x04abc", "says 40 octets"),
    ],
)
def test_a_malformed_lldpdu_says_what_is_wrong(du: bytes, why: str):
    with pytest.raises(lf.FrameError, match=why):
        lf.decode(du + lf._tlv(lf.END, b""))


def test_texts_keep_every_octet_and_read_escaped():
    f = lf.Frame(lf.CHASSIS_LOCAL, b"x", lf.PORT_LOCAL, b"p\n\x1b[31m\xff", 120, sys_name=b"a\x00b")
    back = lf.decode(lf.lldpdu(f))
    assert back.port_id == b"p\n\x1b[31m\xff" and back.port_text == "p\n\x1b[31m\\xff"
    assert back.sys_name == b"a\x00b"
