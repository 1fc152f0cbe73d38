"""How fast a lab's cables are. On a Spark, 200 Gb/s uses both PCIe roots of a port and the
emulated 100 Gb/s one of them. A lab has no PCIe roots, so both modes become token-bucket rates
of every fabric veth, scaled down so that a small model on a small machine sees the same kind
of difference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkfab.spark import SPEEDS, LinkSpeed

if TYPE_CHECKING:
    from sparkfab.plan import Plan

#: A real link speed is this many times the lab's shaped rate, for a lab whose largest instance
#: has up to RANKS_PER_SCALE ranks (`scale_for`).
SCALE = 500
#: the ranks one SCALE serves: every rank of a lab computes on this machine's few cores, so a
#: larger instance computes longer per token while its bytes per token stay nearly the same
#: (2(n-1)/n of the activations); the lab slows its links in step, so that the network stays a
#: measurable share of TTFT. At TP8 on two cores and 1:500 the link carried 31 % of L2's TTFT at
#: 200 and the increase to 100e moved by tenths of a second between runs
#: (benchmarks/results/lab_tp8_switch8_2core.txt); at TP4 38 %.
RANKS_PER_SCALE = 4
#: the token bucket of every shaped end, bytes: two frames at the largest jumbo MTU (9216, and
#: its Ethernet header), the least that passes any frame the netdev may send (tbf drops a frame
#: larger than its bucket) and sends two back to back. A cable serialises every frame at its
#: rate; a bucket of 128 KiB (the lab's until #59) let 2.6 ms of data through at the veth's speed
#: after every gap of the ring.
BURST_BYTES = 2 * (9216 + 14)


def scale_for(plan: Plan) -> int:
    """The lab's scale for `plan`: SCALE per RANKS_PER_SCALE ranks of its largest instance (1:500
    up to TP4, 1:1000 at TP8), SCALE where it serves nothing."""
    ranks = max((i.tp for i in plan.instances), default=1)
    return SCALE * max(1, -(-ranks // RANKS_PER_SCALE))


def rate_mbit(mode: LinkSpeed, scale: int = SCALE) -> int:
    """The shaped rate of every fabric veth at `mode`, Mbit/s: the rate the mode stands for
    (100e: 100 Gb/s, an exact half of 200, not the 109 Gb/s one root measured) over the scale."""
    return round(SPEEDS[mode].nominal_gbps * 1000 / scale)


def rate_text(mode: LinkSpeed, scale: int = SCALE) -> str:
    """How the lab shapes `mode`, for output: '400 Mbit/s (200 Gb/s at 1:500)'."""
    return f"{rate_mbit(mode, scale)} Mbit/s ({SPEEDS[mode].text} at 1:{scale})"


def rate_gbps(mode: LinkSpeed, scale: int = SCALE) -> float:
    return rate_mbit(mode, scale) / 1000
