"""An LLDPDU, TLV by TLV (IEEE 802.1AB-2016 §8): what a switch OS or a Spark puts on the wire,
built (`encode`) for the lab's devices and discover's own announcements, and read back
(`decode`) from what a netdev heard.

A TLV is a 7-bit type and a 9-bit length (at most 511 octets of value), then the value. Chassis
ID (1) and Port ID (2) carry a subtype octet before their id (at most 255 octets in all); TTL (3)
is two octets of seconds; Port Description (4), System Name (5) and System Description (6) are
text of up to 255 octets; System Capabilities (7) two 16-bit masks; Management Address (8) an
address with its own length and subtype; End (0) closes the LLDPDU. The frame goes to the
nearest-bridge group address 01:80:c2:00:00:0e with EtherType 0x88cc.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

ETHERTYPE = 0x88CC
NEAREST_BRIDGE = bytes.fromhex("0180c200000e")

# TLV types
END, CHASSIS, PORT, TTL, PORT_DESCR, SYS_NAME, SYS_DESCR, CAPS, MGMT = range(9)
# Chassis ID subtypes (§8.5.2.2) and Port ID subtypes (§8.5.3.2) sparkfab's devices use
CHASSIS_MAC, CHASSIS_LOCAL = 4, 7
PORT_IFALIAS, PORT_MAC, PORT_IFNAME, PORT_LOCAL = 1, 3, 5, 7
#: System Capabilities bits (§8.5.8.1)
CAP_BRIDGE, CAP_ROUTER, CAP_STATION = 0x0004, 0x0010, 0x0080
MAX_TEXT = 255


class FrameError(ValueError):
    """An LLDPDU that does not follow the standard: refused whole, with why."""


@dataclass(frozen=True)
class Frame:
    """One LLDPDU. Ids and texts are bytes as sent (a neighbour may send any); `extra` holds TLVs
    sparkfab does not read (organizationally specific ones, or anything a device adds), kept as
    (type, value) so that a frame is encoded again byte for byte."""

    chassis_subtype: int
    chassis_id: bytes
    port_subtype: int
    port_id: bytes
    ttl: int
    port_descr: bytes | None = None
    sys_name: bytes | None = None
    sys_descr: bytes | None = None
    caps: tuple[int, int] | None = None  # (capable, enabled)
    mgmt: tuple[str, ...] = ()  # management addresses (IPv4 or IPv6), as text
    extra: tuple[tuple[int, bytes], ...] = field(default=())

    def text(self, value: bytes | None) -> str:
        """A TLV's text as a str: UTF-8 where it is, each other byte escaped (\\xNN); never fails."""
        return "" if value is None else value.decode("utf-8", "backslashreplace")

    @property
    def port_text(self) -> str:
        """The port id as lldpd shows it: a MAC as aa:bb:..., else the id's text."""
        if self.port_subtype == PORT_MAC and len(self.port_id) == 6:
            return ":".join(f"{b:02x}" for b in self.port_id)
        return self.text(self.port_id)

    @property
    def chassis_text(self) -> str:
        if self.chassis_subtype == CHASSIS_MAC and len(self.chassis_id) == 6:
            return ":".join(f"{b:02x}" for b in self.chassis_id)
        return self.text(self.chassis_id)


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", "").replace("-", ""))


def _tlv(kind: int, value: bytes) -> bytes:
    if len(value) > 511:
        raise FrameError(f"TLV {kind}: {len(value)} octets (at most 511)")
    return struct.pack("!H", kind << 9 | len(value)) + value


def _mgmt(address: str) -> bytes:
    ip = ipaddress.ip_address(address)
    subtype = 1 if ip.version == 4 else 2  # IANA address family numbers
    addr = bytes([subtype]) + ip.packed
    # interface numbering subtype 1 (unknown), interface number 0, no OID
    return bytes([len(addr)]) + addr + b"\x01" + struct.pack("!I", 0) + b"\x00"


def lldpdu(f: Frame) -> bytes:
    """The LLDPDU's octets (the Ethernet payload), mandatory TLVs first, End last."""
    out = _tlv(CHASSIS, bytes([f.chassis_subtype]) + f.chassis_id)
    out += _tlv(PORT, bytes([f.port_subtype]) + f.port_id)
    out += _tlv(TTL, struct.pack("!H", f.ttl))
    for kind, value in ((PORT_DESCR, f.port_descr), (SYS_NAME, f.sys_name), (SYS_DESCR, f.sys_descr)):
        if value is not None:
            out += _tlv(kind, value)
    if f.caps is not None:
        out += _tlv(CAPS, struct.pack("!HH", *f.caps))
    for address in f.mgmt:
        out += _tlv(MGMT, _mgmt(address))
    for kind, value in f.extra:
        out += _tlv(kind, value)
    return out + _tlv(END, b"")


def encode(f: Frame, source: bytes) -> bytes:
    """The whole Ethernet frame from `source` (a MAC's 6 octets), padded to 60 octets."""
    frame = NEAREST_BRIDGE + source + struct.pack("!H", ETHERTYPE) + lldpdu(f)
    return frame.ljust(60, b"\x00")


def _tlvs(data: bytes) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    at = 0
    while True:
        if at + 2 > len(data):
            raise FrameError("ends without an End TLV")
        head = struct.unpack_from("!H", data, at)[0]
        kind, length = head >> 9, head & 0x1FF
        at += 2
        if at + length > len(data):
            raise FrameError(f"TLV {kind} says {length} octets, {len(data) - at} remain")
        value = data[at : at + length]
        at += length
        if kind == END:
            return out
        out.append((kind, value))


def _mandatory(tlvs: list[tuple[int, bytes]]) -> tuple[int, bytes, int, bytes, int]:
    kinds = [k for k, _ in tlvs[:3]]
    if kinds != [CHASSIS, PORT, TTL]:
        raise FrameError(f"the first TLVs are {kinds}, not Chassis ID, Port ID, TTL")
    (_, chassis), (_, port), (_, ttl) = tlvs[:3]
    for name, value in (("Chassis ID", chassis), ("Port ID", port)):
        if not 2 <= len(value) <= 256:
            raise FrameError(f"{name} of {max(0, len(value) - 1)} octets after its subtype (1 to 255)")
    if len(ttl) != 2:
        raise FrameError(f"TTL of {len(ttl)} octets (2)")
    return chassis[0], chassis[1:], port[0], port[1:], struct.unpack("!H", ttl)[0]


def _address(value: bytes) -> str | None:
    if not value or value[0] < 2 or len(value) < 1 + value[0]:
        return None
    addr = value[1 : 1 + value[0]]
    try:
        if addr[0] == 1 and len(addr) == 5:
            return str(ipaddress.IPv4Address(addr[1:]))
        if addr[0] == 2 and len(addr) == 17:
            return str(ipaddress.IPv6Address(addr[1:]))
    except ValueError:
        return None
    return None


def decode(payload: bytes) -> Frame:
    """The LLDPDU in an Ethernet payload (after the EtherType). Raises FrameError on one that does
    not follow the standard; texts keep whatever octets were sent."""
    tlvs = _tlvs(payload)
    cs, cid, ps, pid, ttl = _mandatory(tlvs)
    texts: dict[int, bytes] = {}
    caps: tuple[int, int] | None = None
    mgmt: list[str] = []
    extra: list[tuple[int, bytes]] = []
    for kind, value in tlvs[3:]:
        if kind in (CHASSIS, PORT, TTL):
            raise FrameError(f"a second TLV {kind}")
        if kind in (PORT_DESCR, SYS_NAME, SYS_DESCR):
            if kind in texts:
                raise FrameError(f"a second TLV {kind}")
            texts[kind] = value
        elif kind == CAPS and len(value) == 4:
            caps = struct.unpack("!HH", value)
        elif kind == MGMT and (address := _address(value)) is not None:
            mgmt.append(address)
        else:
            extra.append((kind, value))
    return Frame(
        cs,
        cid,
        ps,
        pid,
        ttl,
        texts.get(PORT_DESCR),
        texts.get(SYS_NAME),
        texts.get(SYS_DESCR),
        caps,
        tuple(mgmt),
        tuple(extra),
    )


def decode_ethernet(frame: bytes) -> tuple[bytes, Frame]:
    """(source MAC, LLDPDU) of a whole Ethernet frame, an 802.1Q tag skipped."""
    if len(frame) < 14:
        raise FrameError(f"{len(frame)} octets: shorter than an Ethernet header")
    source, kind, at = frame[6:12], struct.unpack_from("!H", frame, 12)[0], 14
    if kind == 0x8100 and len(frame) >= 18:
        kind, at = struct.unpack_from("!H", frame, 16)[0], 18
    if kind != ETHERTYPE:
        raise FrameError(f"EtherType {kind:#06x}, not LLDP's")
    return source, decode(frame[at:])
