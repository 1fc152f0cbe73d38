"""`sparkfab exporter start|stop` on lab Sparks, as systemd sees it: started and enabled once, a
second start changes nothing, a start after what it runs changed restarts it on that Spark alone,
stop stops and disables it, and --check says what would change without changing it."""

from __future__ import annotations

import pytest

from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

pytestmark = [pytest.mark.xdist_group("pair1"), pytest.mark.lab, requires_lab]

INV = "inventory/pair-1cable.yml"
UNIT = "sparkfab-exporter.service"


def _state(host: str) -> tuple[str, str, str]:
    """(active state, enabled state, main pid) of the exporter's unit on `host`."""
    out = ssh("pair1", host, f"systemctl show -p ActiveState -p UnitFileState -p MainPID {UNIT}").stdout
    shown = dict(line.split("=", 1) for line in out.split())
    return shown["ActiveState"], shown["UnitFileState"], shown["MainPID"]


def test_the_exporter_starts_once_restarts_where_its_files_changed_and_stops():
    with lab(INV, "pair1"):
        assert sparkfab("apply", INV, "--lab", "-q").code == 0
        check = sparkfab("exporter", "start", INV, "--lab", "--check")
        assert check.code == 0 and "would change 2 host(s)" in check.err, check.err
        assert _state("spark-a")[0] == "inactive"  # --check changed nothing
        first = sparkfab("exporter", "start", INV, "--lab")
        assert first.code == 0 and "on 2 host(s)" in first.err, first.err
        a, b = _state("spark-a"), _state("spark-b")
        assert a[:2] == b[:2] == ("active", "enabled"), (a, b)
        again = sparkfab("exporter", "start", INV, "--lab")
        assert again.code == 0 and "on 0 host(s)" in again.err, again.err
        assert (_state("spark-a"), _state("spark-b")) == (a, b)  # not restarted
        # what spark-a's exporter runs changes: the next start restarts it there alone
        edit = "sed -i 's/^{/{ /' /etc/sparkfab/exporter.json && python3 -m json.tool /etc/sparkfab/exporter.json"
        assert ssh("pair1", "spark-a", edit).returncode == 0
        changed = sparkfab("exporter", "start", INV, "--lab")
        assert changed.code == 0 and "on 1 host(s) (spark-a)" in changed.err, changed.err
        a2 = _state("spark-a")
        assert a2[0] == "active" and a2[2] != a[2], (a, a2)
        assert _state("spark-b") == b
        stop = sparkfab("exporter", "stop", INV, "--lab")
        assert stop.code == 0 and "stopped on 2 host(s)" in stop.err, stop.err
        assert _state("spark-a")[:2] == _state("spark-b")[:2] == ("inactive", "disabled")
        assert "stopped on 0 host(s)" in sparkfab("exporter", "stop", INV, "--lab").err
