"""verify's cabling waits for a switch's own LLDP interval only where something can still be
heard: a switch port whose netdev has carrier and heard nobody yet; a netdev without carrier is
reported at once (nothing arrives on a dark port, however long verify waits)."""

from __future__ import annotations

from sparkfab.facts.neighbours import Heard
from sparkfab.facts.netdevs import Link
from sparkfab.switches import profiles
from sparkfab.verify import checks
from sparkfab.verify.result import FAIL
from sparkfab.verify.run import LLDP_WAIT_S, _patience
from tests.helpers.inventories import plan_of
from tests.unit.resolve.test_architecture_checks import _switched


def _heard(netdevs: list[str], lit: set[str]) -> Heard:
    links = {
        n: Link(n, ("UP", "LOWER_UP") if n in lit else ("UP",), 9000, "UP" if n in lit else "DOWN") for n in netdevs
    }
    return Heard(True, links, frozenset({"me"}), {})


def test_a_switch_port_waits_the_switchs_interval_only_with_carrier():
    plan = plan_of(_switched(2, "glm-5.3-tp8"))
    host = plan.hosts[0]
    netdevs = [i.netdev for i in host.ifaces]
    interval = profiles.profile(plan.switch(host.ifaces[0].switch).os).wire.interval_s
    for lit, wait in ((set(netdevs), interval + LLDP_WAIT_S), (set(), LLDP_WAIT_S)):
        heard = {host.name: _heard(netdevs, lit)}
        failed = [r for r in checks.cabling(plan, host, heard[host.name]) if r.status == FAIL]
        # both twins on the switch heard nobody, lit or dark: the same rows, different patience
        assert [(r.subject.split()[0], r.actual) for r in failed] == [(n, "-") for n in netdevs]
        assert _patience(plan, failed, heard) == wait, (lit, failed)
