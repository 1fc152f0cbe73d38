"""Send and hear LLDP frames on a host's netdevs with raw sockets, with nothing installed: the
Python of the host itself (a DGX Spark's python3, as root) and its standard library only.

sparkfab runs it on each Spark for `discover` (a short-lived listener and sender, whether or not
lldpd is there: nothing is installed, started or written) and, in the lab, as each switch (a
sender of the frames its OS puts on the wire, at its interval). sparkfab builds the LLDPDUs and
decodes what was heard (`sparkfab.lldp.frame`); this program only relays octets.

Its one argument is JSON:
  send     {netdev: hex of an LLDPDU, or a list of them}: sent from that netdev's own MAC to
           01:80:c2:00:00:0e, each every round
  listen   [netdev]: netdevs whose frames from other hosts are printed
  need     [netdev]: those that must hear another host before the end (default: listen)
  own      [MAC]: this host's MACs, whose frames (its own twins') are not printed
  every    seconds between two sends
  seconds  how long to run at most (0: until ended, sending only)
  linger   once every listened netdev has heard another host, run this much longer, then end
  limit    the most frames printed per netdev (a neighbour flood is counted, not printed)
Output: one JSON line per frame heard, {"netdev": NAME, "frame": HEX}, and at the end
{"silent": [netdevs that heard no other host], "dropped": {netdev: frames not printed}}.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import sys
import time

ETH_P_LLDP = 0x88CC
NEAREST_BRIDGE = bytes.fromhex("0180c200000e")
SOL_PACKET, PACKET_ADD_MEMBERSHIP, PACKET_MR_MULTICAST = 263, 1, 0
PACKET_OUTGOING = 4


def open_socket(netdev: str) -> socket.socket:
    """A raw socket on `netdev` for LLDP, with the LLDP group address joined while it is open
    (a NIC filters multicast; the membership ends with the socket: nothing stays changed)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_LLDP))
    s.bind((netdev, ETH_P_LLDP))
    index = socket.if_nametoindex(netdev)
    mreq = struct.pack("iHH8s", index, PACKET_MR_MULTICAST, 6, NEAREST_BRIDGE)
    s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
    return s


def frame_for(sock: socket.socket, lldpdu: bytes) -> bytes:
    mac: bytes = sock.getsockname()[4]
    frame = NEAREST_BRIDGE + mac + struct.pack("!H", ETH_P_LLDP) + lldpdu
    return frame.ljust(60, b"\x00")


def say(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


class Heard:
    """What the listened netdevs heard from other hosts: each distinct frame printed once, at
    most `limit` per netdev (the rest counted)."""

    def __init__(self, own: set[bytes], limit: int) -> None:
        self.own, self.limit = own, limit
        self.netdevs: set[str] = set()
        self.seen: dict[str, set[bytes]] = {}
        self.dropped: dict[str, int] = {}

    def take(self, data: bytes, addr: tuple[str, int, int, int, bytes]) -> None:
        name, pkttype = addr[0], addr[2]
        if pkttype == PACKET_OUTGOING or len(data) < 14 or data[6:12] in self.own:
            return
        self.netdevs.add(name)
        known = self.seen.setdefault(name, set())
        if data in known:
            return
        if len(known) >= self.limit:
            self.dropped[name] = self.dropped.get(name, 0) + 1
            return
        known.add(data)
        say({"netdev": name, "frame": data.hex()})


def send_all(socks: dict[str, socket.socket], frames: dict[str, list[bytes]]) -> None:
    for name, batch in frames.items():
        for frame in batch:
            try:
                socks[name].send(frame)
            except OSError:
                pass  # a netdev without carrier: nothing to send on


def main() -> None:
    cfg = json.loads(sys.argv[1])
    send = {
        name: [bytes.fromhex(d) for d in (du if isinstance(du, list) else [du])]
        for name, du in cfg.get("send", {}).items()
    }
    listen = set(cfg.get("listen", []))
    need = set(cfg.get("need", listen)) & listen
    own = {bytes.fromhex(m.replace(":", "")) for m in cfg.get("own", [])}
    every, seconds, linger = float(cfg.get("every", 1)), float(cfg.get("seconds", 10)), float(cfg.get("linger", 2))
    socks = {name: open_socket(name) for name in sorted(set(send) | listen)}
    frames = {name: [frame_for(socks[name], d) for d in dus] for name, dus in send.items()}
    heard = Heard(own, int(cfg.get("limit", 64)))
    start = time.monotonic()
    next_send, end = start, start + seconds if seconds else float("inf")
    lingering = False
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_send:
            send_all(socks, frames)
            next_send = now + every
        ready, _, _ = select.select([socks[n] for n in listen], [], [], max(0.0, min(next_send - now, 0.25)))
        for s in ready:
            heard.take(*s.recvfrom(65535))
        if listen and not lingering and need <= heard.netdevs:
            end, lingering = min(end, time.monotonic() + linger), True
    say({"silent": sorted(listen - heard.netdevs), "dropped": heard.dropped})


if __name__ == "__main__":
    main()
