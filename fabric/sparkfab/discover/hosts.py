"""Reaching the Sparks for discover: their fabric netdevs brought up, what lldpd heard where it
runs, and LLDP frames sent and heard by sparkfab's relay in each Spark's own python3
(`assets/lldp_probe.py`), all at once."""

from __future__ import annotations

import concurrent.futures as cf
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkfab.connection import as_root
from sparkfab.discover.cables import Discovery, HostView, derive, heard, unheard
from sparkfab.facts.neighbours import NEIGHBOURS, Neighbour
from sparkfab.facts.netdevs import LINKS
from sparkfab.facts.remote import Remote
from sparkfab.lldp import frame as lf
from sparkfab.spark import LinkSpeed, port_of
from sparkfab.switches import profiles

#: the relay a Spark runs to send and hear LLDP frames (its own python3, nothing installed)
RELAY = (Path(__file__).resolve().parents[1] / "assets" / "lldp_probe.py").read_text()
#: how long a Spark's lldpd keeps what discover's own frames said (it may run beside the relay)
OWN_TTL_S = 20
#: the longest a port is listened to for a switch that has not announced yet: a switch's interval
#: as shipped (RouterOS, Cumulus, SONiC: 30 s), and a little more
SWITCH_WAIT_S = 35.0


def bring_up(th: Remote, view: HostView) -> None:
    """Root, the fabric netdevs up (no addresses needed) and what the host says it is (its
    hostname, its MACs); a failure is kept on the view."""
    try:
        as_root(th)
        listing = LINKS.of(th)
        view.fabric = sorted(name for name in listing if port_of(name))
        for name in view.fabric:
            th.run(f"ip link set {name} up")
        view.hostname = th.check_output("hostname").strip()
        view.own_macs = {link.address.lower() for link in listing.values() if link.address}
        view.macs = {listing[n].address.lower(): n for n in view.fabric if listing[n].address}
    except Exception as exc:
        view.error = _first_line(exc)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def read_lldpd(th: Remote, view: HostView) -> None:
    """What lldpd heard, where it runs (asked to announce now first): merged into `view`."""
    if view.error:
        return
    th.run("lldpcli update")
    heard = NEIGHBOURS.parse(th.run(NEIGHBOURS.command()))
    listing = heard.links if heard.links is not None else LINKS.of(th)  # no lldpd: the links alone
    view.carrier = {name for name, link in listing.items() if port_of(name) and link.carrier}
    view.lldpd = heard.answered and not heard.unreadable
    if heard.unreadable:
        view.odd.append(f"{view.label}: lldpd's listing could not be read ({heard.unreadable}); read from frames")
    view.chassis |= heard.own
    for netdev, found in heard.ports.items():
        if port_of(netdev):
            _add(view, netdev, found)


def _add(view: HostView, netdev: str, found: list[Neighbour]) -> None:
    have = view.ports.setdefault(netdev, [])
    have += [n for n in found if n not in have]


def own_frame(view: HostView, netdev: str) -> lf.Frame:
    """What discover announces on `netdev`: the host's name and the netdev's (as lldpd does after
    apply), a short TTL (a Spark's lldpd that hears it forgets it soon)."""
    mac = next((m for m, n in view.macs.items() if n == netdev), "00:00:00:00:00:00")
    name = netdev.encode()
    return lf.Frame(
        lf.CHASSIS_MAC,
        lf.mac_bytes(mac),
        lf.PORT_IFNAME,
        name,
        OWN_TTL_S,
        name,
        view.hostname.encode(),
        b"sparkfab discover",
        (lf.CAP_STATION, lf.CAP_STATION),
    )


def listen(th: Remote, view: HostView, wait_s: float) -> None:
    """Send this Spark's frames on its fabric netdevs and hear its neighbours' with the relay,
    until every port with carrier heard another host, here or in lldpd's table (then 3 s more,
    for late listeners), or `wait_s` passed; each frame decoded here, a malformed one named, a
    flood counted. What a netdev hears now replaces what lldpd's table held for it: lldpd keeps a
    neighbour for its TTL (120 s), after a recabling too."""
    if view.error:
        return
    live = sorted(n for n in view.fabric if n in view.carrier) if view.carrier else list(view.fabric)
    config = {
        "send": {n: lf.lldpdu(own_frame(view, n)).hex() for n in view.fabric},
        "listen": live,
        "need": [n for n in live if not heard(view, n)],
        "own": sorted(view.own_macs),
        "every": 1.0,
        "seconds": wait_s,
        "linger": 3.0,
    }
    try:
        out = th.check_output("python3 -c %s %s", RELAY, json.dumps(config))
    except Exception as exc:
        view.error = f"the LLDP relay failed: {_first_line(exc)}"
        return
    cached = {n: list(found) for n, found in view.ports.items()}
    view.ports = {}
    for line in out.splitlines():
        _take(view, line)
    for netdev, found in cached.items():  # lldpd's word only where nothing was heard now
        if not heard(view, netdev):
            _add(view, netdev, found)


def _take(view: HostView, line: str) -> None:
    """One line of the relay: a frame heard (decoded, or named as malformed), or the summary."""
    try:
        item = json.loads(line)
    except ValueError:
        return
    if not isinstance(item, dict):
        return
    if "frame" in item:
        netdev = str(item.get("netdev", ""))
        try:
            _source, frame = lf.decode_ethernet(bytes.fromhex(str(item["frame"])))
        except (ValueError, lf.FrameError) as exc:
            view.odd.append(f"{view.label}:{netdev} heard a malformed LLDP frame: {exc}")
            return
        if port_of(netdev):
            _add(view, netdev, [Neighbour.of_frame(frame)])
    for netdev, count in (item.get("dropped") or {}).items():
        view.odd.append(
            f"{view.label}:{netdev} heard more than 64 different LLDP frames ({count} more): a neighbour flood"
        )


def discover(
    targets: list[tuple[str, str, Any]],
    settle_s: float = 2.5,
    by_hostname: bool = False,
    patience_s: float = SWITCH_WAIT_S,
    known: dict[str, profiles.KnownSwitch] | None = None,
    mode: LinkSpeed = "200",
    beyond: frozenset[str] = frozenset(),
    log: Callable[[str], None] = lambda s: None,
    planned: dict[tuple[str, str], str] | None = None,
) -> Discovery:
    """targets: (label, address, testinfra host) for each Spark, in the order given. With
    by_hostname (only addresses were given), Sparks are named by their hostnames. `beyond`:
    the inventory's Sparks a --limit leaves out (`derive`).

    Every port comes up first; after `settle_s`, lldpd (where it runs) is read; then every Spark
    announces and listens with the relay at once, for up to `patience_s` on a port that has heard
    no one (a switch's interval), ending early once every port heard another host."""
    views = [HostView(label, address) for label, address, _ in targets]
    pairs = [(t[2], v) for t, v in zip(targets, views, strict=True)]
    with cf.ThreadPoolExecutor(max_workers=max(1, len(pairs))) as pool:
        list(pool.map(lambda p: bring_up(*p), pairs))  # every port up before any host announces
        time.sleep(settle_s)
        list(pool.map(lambda p: read_lldpd(*p), pairs))
        waiting = sum(len(unheard(v)) for v in views)
        log(
            f"discover: listening for LLDP on {sum(len(v.fabric) for v in views if not v.error)} ports of "
            f"{len(views)} Sparks ({waiting} not heard from lldpd yet): up to {patience_s:.0f} s for a switch's "
            "announcement, less once every port has heard its neighbour"
        )
        t0 = time.monotonic()
        list(pool.map(lambda p: listen(p[0], p[1], patience_s), pairs))
        silent = sorted(f"{v.label}:{n}" for v in views for n in unheard(v))
        log(f"discover: listened {time.monotonic() - t0:.1f} s" + (f"; silent: {', '.join(silent)}" if silent else ""))
    if by_hostname:
        for v in views:
            v.label = v.hostname or v.address
    return derive({v.label: v for v in views}, [v.label for v in views], known, mode, beyond, planned)
