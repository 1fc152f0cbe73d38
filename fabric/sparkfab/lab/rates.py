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


def rate_text(mode: LinkSpeed) -> str:
    """How the lab shapes `mode`, for output: '400 Mbit/s (200 Gb/s at 1:500)'."""
    return f"{RATE_MBIT[mode]} Mbit/s ({SPEEDS[mode].text} at 1:{SCALE})"


def rate_gbps(mode: LinkSpeed) -> float:
    return RATE_MBIT[mode] / 1000
