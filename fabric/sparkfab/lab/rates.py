"""How fast a lab's cables are. On a Spark, 200 Gb/s uses both PCIe roots of a port and the
emulated 100 Gb/s one of them. A lab has no PCIe roots, so both modes become token-bucket rates
of every fabric veth, scaled down so that a small model on a small machine sees the same kind
of difference."""

from __future__ import annotations

from sparkfab.spark import SPEEDS, LinkSpeed

#: A real link speed is this many times the lab's shaped rate.
SCALE = 500
#: link-speed mode -> the shaped rate of every fabric veth, Mbit/s: the rate the mode stands for
#: (100e: 100 Gb/s, an exact half of 200, not the 109 Gb/s one root measured), divided by SCALE
RATE_MBIT: dict[LinkSpeed, int] = {m: round(s.nominal_gbps * 1000 / SCALE) for m, s in SPEEDS.items()}
#: the token bucket of every shaped end, bytes: two frames at the largest jumbo MTU (9216, and
#: its Ethernet header), the least that passes any frame the netdev may send (tbf drops a frame
#: larger than its bucket) and sends two back to back. A cable serialises every frame at its
#: rate; a bucket of 128 KiB (the lab's until #59) let 2.6 ms of data through at the veth's speed
#: after every gap of the ring.
BURST_BYTES = 2 * (9216 + 14)


def rate_text(mode: LinkSpeed) -> str:
    """How the lab shapes `mode`, for output: '400 Mbit/s (200 Gb/s at 1:500)'."""
    return f"{RATE_MBIT[mode]} Mbit/s ({SPEEDS[mode].text} at 1:{SCALE})"


def rate_gbps(mode: LinkSpeed) -> float:
    return RATE_MBIT[mode] / 1000
