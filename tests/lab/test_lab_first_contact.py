"""First contact with Sparks as shipped without lldpd (the lab's "bare" image): discover finds every
cable of a ring and of a switched cluster with frames of its own, nothing installed, and the
Sparks' package list and every file under /etc are the same afterwards; apply then installs lldpd
(from the lab site's mirror) and verify is green. The switch is a SONiC one (an alias, subtype
local, every 30 s), the Sparks named as shipped."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from sparkfab.render import control
from sparkfab.resolve import load_plan
from tests.conftest import REPO
from tests.helpers.inventories import switched_pair
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.lab, requires_lab]

#: what a Spark is that discover must not change: its packages, and every file under /etc
SNAPSHOT = (
    "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' | sha256sum; "
    "find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum; "
    "command -v lldpd lldpcli || echo no-lldpd"
)


def _cables(doc) -> set[frozenset[str]]:
    return {frozenset(c["ends"] if isinstance(c, dict) else c) for c in doc["all"]["vars"]["sparkfab"]["cables"]}


def _sonic_pair(tmp_path) -> str:
    return switched_pair(tmp_path, "fcsonic", "sonic", "sonic", ("1/1", "3/1"), "192.168.242.0/23")


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param("ring4", marks=pytest.mark.xdist_group("ring4")),
        pytest.param("sonic", marks=pytest.mark.xdist_group("fcsonic")),
    ],
)
def test_discover_needs_nothing_installed_and_changes_nothing(tmp_path, layout):
    inv, cluster = ("inventory/ring4.yml", "ring4") if layout == "ring4" else (_sonic_pair(tmp_path), "fcsonic")
    written = yaml.safe_load((REPO / inv).read_text())  # REPO / an absolute path is that path
    hosts = list(written["all"]["hosts"])
    with lab(inv, cluster, "collective", "--shipped", "bare"):
        before = {h: ssh(cluster, h, SNAPSHOT).stdout for h in hosts}
        assert all("no-lldpd" in b for b in before.values()), before
        found = tmp_path / "found.yml"
        res = sparkfab("discover", "--inventory", inv, "--lab", "-o", str(found))
        assert res.code == 0, res.err
        assert "discover: listening for LLDP on" in res.err  # it says what it waits for
        assert _cables(yaml.safe_load(found.read_text())) == _cables(written)
        assert sparkfab("validate", str(found)).code == 0
        after = {h: ssh(cluster, h, SNAPSHOT).stdout for h in hosts}
        assert after == before  # nothing installed, nothing under /etc changed
        applied = sparkfab("apply", inv, "--lab", "-q")  # installs lldpd from the site's mirror
        assert applied.code == 0, applied.err
        green = sparkfab("verify", inv, "--lab", "--format", "json")
        failed = [r for r in json.loads(green.out)["results"] if r["status"] == "fail"]
        assert green.code == 0, failed
        if layout == "ring4":  # the control plane over the fabric: sparkfab's own firewall is on
            _perftest_ports_pass_the_firewall(cluster, inv)


def _perftest_ports_pass_the_firewall(cluster: str, inv: str) -> None:
    """perftest's out-of-band exchange (TCP to the far twin's fabric address, `verify --perf`)
    passes sparkfab's firewall on a ring; a port it does not admit is dropped. The lab has no RDMA
    devices for ib_write_bw itself: the same ports and protocol are shown with a listener."""
    plan = load_plan(str(REPO / inv))
    a = plan.hosts[0]
    iface = next(i for i in a.ifaces if i.peer_host)
    listen = (
        'timeout 15 python3 -c "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, '
        "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', {port})); s.listen(4); [s.accept()[0].close() for _ in "
        'range(1)]" >/dev/null 2>&1 &'
    )
    connect = "python3 -c \"import socket; socket.create_connection(('{ip}', {port}), 3).close(); print('open')\""
    for port, admitted in ((control.PERFTEST_BASE, True), (control.PERFTEST_BASE + 200, False)):
        ssh(cluster, str(iface.peer_host), listen.format(port=port))
        time.sleep(1)
        res = ssh(cluster, a.name, connect.format(ip=iface.peer_address, port=port), timeout=20)
        assert ("open" in res.stdout) is admitted, (port, res.stdout, res.stderr[-300:])
