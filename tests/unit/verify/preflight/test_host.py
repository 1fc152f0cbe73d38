"""preflight's checks of one Spark (`verify.preflight.host`): its foreign netplan files named without
importing Ansible."""

from __future__ import annotations

from sparkfab.resolve import load_plan
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


class _Res:
    def __init__(self, rc: int, stdout: str = "", stderr: str = "") -> None:
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


class _Host:
    """A host that answers `docker ...` commands from a table (what verify sends is recorded)."""

    def __init__(self, answers: dict[str, _Res]) -> None:
        self.answers, self.sent = answers, []

    def run(self, cmd: str) -> _Res:
        self.sent.append(cmd)
        return next((r for k, r in self.answers.items() if k in cmd), _Res(1, "", "unknown"))


def test_preflight_names_foreign_netplan_files_without_importing_ansible():
    from sparkfab.verify import preflight

    host = load_plan(str(REPO / "inventory/ring4.yml")).hosts[0]
    dev = sorted(host.fabric_ifs)[0]
    files = {
        "/etc/netplan/60-sparkfab.yaml": f"network: {{ethernets: {{{dev}: {{}}}}}}",
        "/etc/netplan/40-cx7.yaml": f"network:\n  ethernets:\n    {dev}:\n      mtu: 1500",
        "/etc/netplan/01-mgmt.yaml": "network: {ethernets: {enP7s7: {dhcp4: true}}}",
    }
    listing = "".join(f"\n@@sparkfab-file {path}\n{text}\n" for path, text in files.items())
    rows = preflight.host.netplan(host, _Host({"": _Res(0, listing)}))
    assert [(r.subject, r.status) for r in rows] == [("/etc/netplan/40-cx7.yaml", "fail")]
    assert dev in rows[0].detail
