"""How a switch's operating system names itself and its ports over LLDP: one profile per OS.

A Spark on a switch hears the switch's system name and the port id of the breakout lane it is
cabled to. Each OS names a lane its own way, and `verify` (is the cable where the plan says?),
`discover` (which port is this?) and the lab's switches (what does a real one announce?) all
read the names here:

- **RouterOS** (MikroTik CRS804, CRS812): a cage is `<form>-<cage>-<first lane>`, the cage
  counted within its form (`qsfp56-dd` for the 8-lane QSFP-DD cages, `qsfp56` for the 4-lane
  QSFP56 ones) and a breakout leg named by the first electrical lane it uses: 2x200G on a
  QSFP-DD cage is `qsfp56-dd-1-1` and `qsfp56-dd-1-5`, 4x100G `-1 -3 -5 -7`, a QSFP56 cage at
  one 200G leg `qsfp56-1-1` (MikroTik's Ethernet manual and published RouterOS configurations).
  Its factory identity, the LLDP system name, is `MikroTik`.
- **Cumulus Linux** (NVIDIA Spectrum switches): a front panel port is `swp<port>`, its breakout
  legs `swp<port>s0`, `swp<port>s1`, ... (Cumulus's "Switch Port Attributes"); lldpd announces
  the interface name and the hostname (factory `cumulus`).
- **generic**: sparkfab's own names, `p<port>s<leg>`; a real switch of unknown OS is matched by
  the last two numbers of its port id (port, then leg).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sparkfab.catalog import MODELS, PortGroup, SwitchModel, generic
from sparkfab.spark import SPEEDS, LinkSpeed

SwitchOS = Literal["routeros", "cumulus", "generic"]
OS_NAMES: tuple[SwitchOS, ...] = ("routeros", "cumulus", "generic")
#: the OS a catalog model runs unless the inventory says otherwise
MODEL_OS: dict[str, SwitchOS] = {"CRS804": "routeros", "CRS812": "routeros", "generic": "generic"}


def electrical_lanes(group: PortGroup) -> int:
    """A cage's electrical lanes: 8 in a QSFP-DD (400G), 4 in a QSFP56/QSFP28."""
    return 8 if "DD" in group.kind or group.kind.startswith(("400", "800")) else 4


def _cages(model: SwitchModel, lanes: int) -> list[int]:
    """The front ports whose cages have `lanes` electrical lanes, in order: RouterOS counts the
    cages of each form on their own (the CRS812's ports 3 and 4 are `qsfp56-1` and `qsfp56-2`)."""
    return [p for g in model.groups if electrical_lanes(g) == lanes for p in range(g.first, g.last + 1)]


def _group(model: SwitchModel, port: int) -> PortGroup | None:
    return next((g for g in model.groups if g.first <= port <= g.last), None)


@dataclass(frozen=True)
class Profile:
    os: SwitchOS
    title: str
    factory_name: str | None  # the system name a switch announces as shipped (verify says so; None: none known)

    def port_id(self, model: SwitchModel, port: int, leg: int, legs: int) -> str:
        """The port id the switch announces for breakout leg `leg` of `legs` on front port `port`."""
        if self.os == "routeros":
            g = _group(model, port)
            assert g is not None, f"{model.name} has no port {port}"
            lanes = electrical_lanes(g)
            form = "qsfp56-dd" if lanes == 8 else "qsfp56"
            per_leg = max(1, lanes // max(1, legs))
            return f"{form}-{_cages(model, lanes).index(port) + 1}-{(leg - 1) * per_leg + 1}"
        if self.os == "cumulus":
            return f"swp{port}" if legs <= 1 else f"swp{port}s{leg - 1}"
        return f"p{port}s{leg}"

    def place(self, model: SwitchModel, port_id: str, legs: dict[int, int]) -> tuple[int, int] | None:
        """The (front port, leg) a port id names, given the legs per port at the cluster's lane
        speed (`legs[port]`); None when this OS would not name a leg so."""
        if self.os == "routeros":
            m = re.fullmatch(r"(qsfp56-dd|qsfp56|qsfp28)-(\d+)-(\d+)", port_id)
            if not m:
                return None
            lanes = 8 if m.group(1) == "qsfp56-dd" else 4
            cages = _cages(model, lanes)
            cage, lane = int(m.group(2)), int(m.group(3))
            if not 1 <= cage <= len(cages):
                return None
            port = cages[cage - 1]
            per_leg = max(1, lanes // max(1, legs.get(port, 1)))
            if (lane - 1) % per_leg:
                return None
            leg = (lane - 1) // per_leg + 1
            return (port, leg) if leg <= max(1, legs.get(port, 1)) else None
        if self.os == "cumulus":
            m = re.fullmatch(r"swp(\d+)(?:s(\d+))?", port_id)
            return (int(m.group(1)), int(m.group(2) or 0) + 1) if m else None
        m = re.fullmatch(r"p(\d+)s(\d+)", port_id)
        if m:
            return int(m.group(1)), int(m.group(2))
        nums = re.findall(r"\d+", port_id)
        return (int(nums[-2]), int(nums[-1])) if len(nums) >= 2 else None


PROFILES: dict[SwitchOS, Profile] = {
    "routeros": Profile("routeros", "MikroTik RouterOS", "MikroTik"),
    "cumulus": Profile("cumulus", "NVIDIA Cumulus Linux", "cumulus"),
    "generic": Profile("generic", "generic (sparkfab's names)", None),
}


def profile(os: SwitchOS) -> Profile:
    return PROFILES[os]


def guess(port_id: str) -> SwitchOS | None:
    """The OS whose naming a port id has (discover: a switch it has not been told about)."""
    if re.fullmatch(r"(qsfp56-dd|qsfp56|qsfp28)-\d+-\d+", port_id):
        return "routeros"
    if re.fullmatch(r"swp\d+(s\d+)?", port_id):
        return "cumulus"
    if re.fullmatch(r"p\d+s\d+", port_id):
        return "generic"
    return None


@dataclass(frozen=True)
class KnownSwitch:
    """A switch whose port ids can be placed (discover): its key in the inventory, its model and
    OS, and the legs each front port breaks out into at the cluster's lane speed."""

    key: str
    model: SwitchModel
    os: SwitchOS
    legs: dict[int, int]

    def place(self, port_id: str) -> str | None:
        """The inventory's `port/leg` for a port id, None when this switch has no such leg."""
        at = profile(self.os).place(self.model, port_id, self.legs)
        if at is None or not self.model.has_port(at[0]) or not 1 <= at[1] <= max(1, self.legs.get(at[0], 1)):
            return None
        return f"{at[0]}/{at[1]}"


def known_switch(key: str, model: SwitchModel, os: SwitchOS, mode: LinkSpeed) -> KnownSwitch:
    lane = SPEEDS[mode].lane_gbps
    return KnownSwitch(key, model, os, {p: model.lanes(p, lane) for p in range(1, model.port_count + 1)})


def guessed_switch(system: str, port_ids: list[str], mode: LinkSpeed) -> KnownSwitch | None:
    """A switch no inventory names, from the port ids it announced: RouterOS (a CRS812 where a
    QSFP56 cage is seen, else a CRS804), Cumulus or sparkfab's generic names on a generic switch;
    None when no profile names all its ports so."""
    oses = {guess(p) for p in port_ids}
    os = oses.pop() if len(oses) == 1 else None
    if os is None:
        return None
    if os == "routeros":
        name = "CRS812" if any(re.fullmatch(r"qsfp56-\d+-\d+", p) for p in port_ids) else "CRS804"
        return known_switch(system, MODELS[name], os, mode)
    ports = max(int(re.findall(r"\d+", p)[0]) for p in port_ids)
    return known_switch(system, generic(max(32, ports), 400), os, mode)
