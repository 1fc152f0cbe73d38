"""Switch catalog: how many Sparks a switch carries at each per-Spark link speed.

Follows Section 2.3 of the 200-vs-100 Gb/s paper: a 400G QSFP-DD port breaks out into
2 x 200G or 4 x 100G links, one Spark per link. The CRS812's two 200G QSFP56 ports take
one Spark each at 200G; the paper's sizing does not count them at 100G (8 Sparks).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkfab.spark import SPEEDS, LinkSpeed

#: Link speed mode -> the physical speed of one breakout lane (Gb/s).
LANE_GBPS: dict[LinkSpeed, int] = {m: s.lane_gbps for m, s in SPEEDS.items()}
#: One mode per lane speed (100e uses the 200G lanes of 200): what a plan's switch capacity lists.
LANE_MODES: tuple[LinkSpeed, ...] = ("200", "100")


@dataclass(frozen=True)
class PortGroup:
    first: int
    last: int
    kind: str
    lanes: dict[int, int]  # lane speed (Gb/s) -> lanes per port at that speed


@dataclass(frozen=True)
class SwitchModel:
    name: str
    groups: tuple[PortGroup, ...]

    def lanes(self, port: int, lane_gbps: int) -> int:
        """Usable breakout lanes on a port at a lane speed (0: the port cannot be used)."""
        for g in self.groups:
            if g.first <= port <= g.last:
                return g.lanes.get(lane_gbps, 0)
        return 0

    def has_port(self, port: int) -> bool:
        return any(g.first <= port <= g.last for g in self.groups)

    @property
    def port_count(self) -> int:
        return max(g.last for g in self.groups)

    def capacity(self, lane_gbps: int) -> int:
        return sum(self.lanes(p, lane_gbps) for p in range(1, self.port_count + 1))

    @property
    def max_lanes(self) -> int:
        return max(max(g.lanes.values(), default=0) for g in self.groups)


_DD400 = {200: 2, 100: 4}

MODELS: dict[str, SwitchModel] = {
    "CRS804": SwitchModel("CRS804", (PortGroup(1, 4, "400G QSFP-DD", _DD400),)),
    "CRS812": SwitchModel(
        "CRS812",
        (PortGroup(1, 2, "400G QSFP-DD", _DD400), PortGroup(3, 4, "200G QSFP56", {200: 1})),
    ),
}


def generic(ports: int, port_gbps: int) -> SwitchModel:
    lanes = {s: port_gbps // s for s in (200, 100) if port_gbps >= s}
    return SwitchModel("generic", (PortGroup(1, ports, f"{port_gbps}G", lanes),))


def smallest_switch(sparks: int, lane_gbps: int) -> str | None:
    """The catalog switch that carries `sparks` Sparks at `lane_gbps`, smallest first."""
    fitting = [m for m in MODELS.values() if m.capacity(lane_gbps) >= sparks]
    return min(fitting, key=lambda m: m.capacity(lane_gbps)).name if fitting else None
