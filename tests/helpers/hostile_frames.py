"""The hostile frame table: what a misbehaving or hostile neighbour may put on the wire, as raw
LLDPDUs for sparkfab's relay to send (`assets/lldp_probe.py`). Each row names its class."""

from __future__ import annotations

import os

from sparkfab.lldp import frame as lf

SPECIALS = b"p\"o'r`t$(touch PWNED)\n- key: {a: b} | # [x](y) <script>&amp;\x1b[2J\x1b]0;title\x07\xe2\x80\xae\x00"


def _frame(name: bytes, port: bytes, chassis: bytes = b"\x02\xba\xd0\x00\x00\x01", **extra: object) -> bytes:
    f = lf.Frame(lf.CHASSIS_MAC, chassis, lf.PORT_LOCAL, port, 120, extra.get("descr", b"desc"), name,  # type: ignore[arg-type]
                 b"hostile", (lf.CAP_BRIDGE,) * 2)  # fmt: skip
    return lf.lldpdu(f)


def table(spark_name: str, switch_name: str | None = None) -> dict[str, list[bytes]]:
    """Class -> the LLDPDUs of it. `spark_name`: an answering Spark's name to claim; `switch_name`:
    a switch's, to announce as if a Spark did."""
    rows: dict[str, list[bytes]] = {
        "specials": [_frame(SPECIALS[:60], SPECIALS, descr=SPECIALS)],
        "full TLVs of any bytes": [_frame(os.urandom(255), os.urandom(255), descr=os.urandom(255))],
        "every byte value": [_frame(bytes(range(1, 256)), bytes(range(255, 0, -1)), descr=bytes(range(256)))],
        "a Spark's identity from another chassis": [_frame(spark_name.encode(), b"enp1s0f0np0")],
        "malformed": [
            lf._tlv(lf.CHASSIS, b"\x04\x02") + lf._tlv(lf.PORT, b"\x05p0"),  # no TTL, no End
            b"\x02\x07\x04",  # truncated in its first TLV
            b"\xfe\x01" + b"\x00" * 8,  # a type no LLDPDU starts with
        ],
        "a neighbour flood": [
            _frame(b"flood", b"p%d" % i, chassis=b"\x02\xf1" + i.to_bytes(4, "big")) for i in range(200)
        ],
    }
    if switch_name:
        rows["a Spark announcing a switch's name"] = [_frame(switch_name.encode(), b"enP2p1s0f1np1")]
    return rows
