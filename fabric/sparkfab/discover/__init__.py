"""Discover the cabling: log in to each Spark, read LLDP on its ConnectX-7 netdevs, and turn
what every port sees into cables (`discover_inventory` writes them as an inventory's `cables`).

First contact needs nothing installed: a Spark as shipped may have no lldpd. discover sends and
hears LLDP frames itself, with a short-lived relay in the Spark's own python3
(`assets/lldp_probe.py`: raw sockets, nothing installed, started or written), and reads what
lldpd heard too where it runs. Sparks announce at once (each relay sends its Spark's frame every
second while it listens); a switch announces on its own timer, 30 s as shipped, so a port that
has heard no one is listened to for that long before it is called silent.

A direct cable is seen from both ends and by both PCIe twins of each port; a switch port is
seen from the Spark's side only (the switch announces itself by LLDP, and its port ids are read
through its OS's profile, `sparkfab.switches.profiles`). Twins share a wire, so a netdev also hears its
own twin and both far twins: its own chassis is left out and the far twins name one port.
Everything odd is reported: a port with no neighbour, twins that disagree, a neighbour that is
not in the list, a switch port that no profile places, a cable seen from one end only, a Spark
that does not answer. With a --limit, the inventory's other Sparks are not asked: a far end is
one of them when it announces its name (as verify names a far Spark).
"""

from sparkfab.discover.cables import Discovery, HostView, derive
from sparkfab.discover.hosts import discover

__all__ = ["Discovery", "HostView", "derive", "discover"]
