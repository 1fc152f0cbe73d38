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
  A Spark-facing port is a **bridge port** (NVIDIA's switch playbook puts every Spark port in one
  bridge), and RouterOS announces a bridge port's id as `<bridge>/<interface>`
  (`bridge/qsfp56-dd-1-5`; LibreNMS #10592 for 6.46, netdisco #1495 for 7.22, lldpctl captures
  of 6.45-7.3): the bridge's name is any the operator chose, and is read past.
- **SONiC**: lldpmgrd configures each port `portidsubtype local <alias>` (sonic-buildimage,
  dockers/docker-lldp/lldpmgrd), and Spectrum aliases are `etp<port>`, `etp<port>a..h` after a
  breakout; the port description is the port's own name (`Ethernet<lane>`) unless one is set.
- **generic**: sparkfab's own names, `p<port>s<leg>`; a real switch of unknown OS is matched by
  the last two numbers of its port id (port, then leg).

Each profile is also the LLDPDU its OS sends (`Profile.frame`), TLV by TLV, which the lab's
switches put on the wire as they are (`sparkfab.lldp`): what verify and discover read in the lab
is what a real switch of that OS sends, not lldpd configured to look alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sparkfab.lldp import frame as lf
from sparkfab.spark import SPEEDS, LinkSpeed
from sparkfab.switches.catalog import MODELS, PortGroup, SwitchModel, generic

SwitchOS = Literal["routeros", "cumulus", "sonic", "generic"]
OS_NAMES: tuple[SwitchOS, ...] = ("routeros", "cumulus", "sonic", "generic")
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
class Wire:
    """What an OS puts in its LLDPDU besides the port's name, as its own devices send it."""

    port_subtype: int  # the Port ID's subtype (interface name, or locally assigned)
    port_descr: Literal["none", "ifname", "lane"]  # RouterOS sends none; lldpd the interface's name
    descr: str  # the System Description, as the OS writes it ({model}: the switch's model)
    caps: tuple[int, int]  # System Capabilities: (capable, enabled)
    interval_s: int  # how often it announces, as shipped
    ttl_s: int  # how long a neighbour keeps what it heard


@dataclass(frozen=True)
class Profile:
    os: SwitchOS
    title: str
    factory_name: str | None  # the system name a switch announces as shipped (verify says so; None: none known)
    wire: Wire

    def port_id(self, model: SwitchModel, port: int, leg: int, legs: int) -> str:
        """The name of breakout leg `leg` of `legs` on front port `port`, as the OS names it."""
        if self.os == "routeros":
            g = _group(model, port)
            assert g is not None, f"{model.name} has no port {port}"
            lanes = electrical_lanes(g)
            form = "qsfp56-dd" if lanes == 8 else "qsfp56"
            per_leg = max(1, lanes // max(1, legs))
            return f"{form}-{_cages(model, lanes).index(port) + 1}-{(leg - 1) * per_leg + 1}"
        if self.os == "cumulus":
            return f"swp{port}" if legs <= 1 else f"swp{port}s{leg - 1}"
        if self.os == "sonic":
            return f"etp{port}" if legs <= 1 else f"etp{port}{chr(ord('a') + leg - 1)}"
        return f"p{port}s{leg}"

    def announced(self, name: str, bridge: str | None = None) -> str:
        """The Port ID a port named `name` announces: a RouterOS bridge port's is `bridge/name`."""
        return f"{bridge}/{name}" if self.os == "routeros" and bridge else name

    def frame(self, model: SwitchModel, port: int, leg: int, legs: int, at: Announcer) -> lf.Frame:
        """The LLDPDU this OS sends on breakout leg `leg` of `legs` on front port `port`."""
        name = self.port_id(model, port, leg, legs)
        w = self.wire
        descr = {"none": None, "ifname": name, "lane": _sonic_ifname(model, port, leg, legs)}[w.port_descr]
        return lf.Frame(
            lf.CHASSIS_MAC,
            lf.mac_bytes(at.chassis_mac),
            w.port_subtype,
            self.announced(name, at.bridge).encode(),
            w.ttl_s,
            None if descr is None else descr.encode(),
            at.identity.encode(),
            w.descr.format(model=model.name).encode(),
            w.caps,
            (at.mgmt,) if at.mgmt else (),
        )

    def place(self, model: SwitchModel, port_id: str, legs: dict[int, int]) -> tuple[int, int] | None:
        """The (front port, leg) a port id names, given the legs per port at the cluster's lane
        speed (`legs[port]`); None when this OS would not name a leg so."""
        if self.os == "routeros":
            return _place_routeros(model, _bare(port_id), legs)
        if self.os == "cumulus":
            m = re.fullmatch(r"swp([0-9]+)(?:s([0-9]+))?", port_id)
            return (int(m.group(1)), int(m.group(2) or 0) + 1) if m else None
        if self.os == "sonic":
            m = re.fullmatch(r"etp([0-9]+)([a-h]?)", port_id)
            return (int(m.group(1)), ord(m.group(2)) - ord("a") + 1 if m.group(2) else 1) if m else None
        m = re.fullmatch(r"p([0-9]+)s([0-9]+)", port_id)
        if m:
            return int(m.group(1)), int(m.group(2))
        nums = re.findall(r"[0-9]+", port_id)
        return (int(nums[-2]), int(nums[-1])) if len(nums) >= 2 else None


@dataclass(frozen=True)
class Announcer:
    """Who sends a switch's frames: its system name (RouterOS's identity, a hostname), the MAC
    its Chassis ID carries, the bridge its Spark ports are in (RouterOS) and a management address."""

    identity: str
    chassis_mac: str
    bridge: str | None = None
    mgmt: str | None = None


_ROUTEROS_PORT = r"(qsfp56-dd|qsfp56|qsfp28)-([0-9]+)-([0-9]+)"


def _bare(port_id: str) -> str:
    """A RouterOS port id without its bridge (`bridge-fabric/qsfp56-dd-1-5` -> `qsfp56-dd-1-5`)."""
    head, sep, tail = port_id.rpartition("/")
    return tail if sep and head and re.fullmatch(_ROUTEROS_PORT, tail) else port_id


def _place_routeros(model: SwitchModel, port_id: str, legs: dict[int, int]) -> tuple[int, int] | None:
    m = re.fullmatch(_ROUTEROS_PORT, port_id)
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


def _sonic_ifname(model: SwitchModel, port: int, leg: int, legs: int) -> str:
    """SONiC's own name of a lane (`Ethernet<first lane>`, 8 lanes a front port on Spectrum-4),
    which lldpd sends as the port description where none is configured."""
    g = _group(model, port)
    lanes = electrical_lanes(g) if g else 8
    return f"Ethernet{(port - 1) * lanes + (leg - 1) * max(1, lanes // max(1, legs))}"


_BRIDGE_ROUTER = (lf.CAP_BRIDGE | lf.CAP_ROUTER,) * 2

#: each OS's LLDPDU as its devices send it. RouterOS: Chassis ID a MAC, Port ID subtype interface
#: name, TTL 120, no Port Description, System Description "MikroTik RouterOS <version> (<channel>)
#: <board>", capabilities Bridge and Router (lldpctl against RouterOS 6.45.9-7.3.1, lldpcli -f
#: json0 in a public Go test, netdisco #1495 on 7.22); interval 30 s (its discover-interval).
#: Cumulus Linux and SONiC run lldpd: its TTL is tx-interval (30 s) x tx-hold (4), the Port
#: Description the interface's name (lldpd's interfaces_helper_port_name_desc); Cumulus names
#: itself "Cumulus Linux version ..." (NVUE's `nv show system`), SONiC "SONiC Software Version:
#: ..." (its lldpd's system description, as `show lldp neighbors` prints it on peers).
PROFILES: dict[SwitchOS, Profile] = {
    "routeros": Profile(
        "routeros",
        "MikroTik RouterOS",
        "MikroTik",
        Wire(lf.PORT_IFNAME, "none", "MikroTik RouterOS 7.22 (stable) {model}", _BRIDGE_ROUTER, 30, 120),
    ),
    "cumulus": Profile(
        "cumulus",
        "NVIDIA Cumulus Linux",
        "cumulus",
        Wire(
            lf.PORT_IFNAME, "ifname", "Cumulus Linux version 5.14.0 running on Nvidia {model}", _BRIDGE_ROUTER, 30, 120
        ),
    ),
    "sonic": Profile(
        "sonic",
        "SONiC",
        "sonic",
        Wire(lf.PORT_LOCAL, "lane", "SONiC Software Version: SONiC.202411 - HwSku: {model}", _BRIDGE_ROUTER, 30, 120),
    ),
    "generic": Profile(
        "generic",
        "generic (sparkfab's names)",
        None,
        Wire(lf.PORT_IFNAME, "ifname", "generic switch ({model})", (lf.CAP_BRIDGE,) * 2, 30, 120),
    ),
}


def profile(os: SwitchOS) -> Profile:
    return PROFILES[os]


def guess(port_id: str) -> SwitchOS | None:
    """The OS whose naming a port id has (discover: a switch it has not been told about)."""
    if re.fullmatch(_ROUTEROS_PORT, _bare(port_id)):
        return "routeros"
    if re.fullmatch(r"swp[0-9]+(s[0-9]+)?", port_id):
        return "cumulus"
    if re.fullmatch(r"etp[0-9]+[a-h]?", port_id):
        return "sonic"
    if re.fullmatch(r"p[0-9]+s[0-9]+", port_id):
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
        name = "CRS812" if any(re.fullmatch(r"qsfp56-[0-9]+-[0-9]+", _bare(p)) for p in port_ids) else "CRS804"
        return known_switch(system, MODELS[name], os, mode)
    ports = max(int(re.findall(r"[0-9]+", p)[0]) for p in port_ids)
    return known_switch(system, generic(max(32, ports), 400), os, mode)
