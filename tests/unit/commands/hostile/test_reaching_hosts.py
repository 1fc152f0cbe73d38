"""Hostile and careless input to the verbs that reach hosts (apply, verify, serve, linkspeed,
preflight, reset, discover, lab), refused before they contact any: the cases (the table's parts:
table.py; how each runs: runner.py)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import SWITCH100, bomb, c, inv, setter, sfset, validate

CASES = [
    validate("lab-up-dry-run-bad", inv(sfset("master_port", 65535)), r"master_port", verb="lab up {inv} --dry-run"),
    validate("verify-bad-inventory", inv(sfset("subnet_pool", "0.0.0.0/0")), r"subnet_pool", verb="verify {inv}"),
    validate(
        "apply-bad-inventory",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="$(id)")),
        r"ansible_host",
        verb="apply {inv} -y",
    ),
    validate(
        "serve-bad-inventory",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A B": "1"})),
        r"A B",
        verb="serve start {inv} -y",
    ),
    validate("linkspeed-bad-inventory", bomb(), r"expands to more than", verb="linkspeed {inv} 100e -y"),
    validate("linkspeed-200-on-100-switch", SWITCH100, r"carries", verb="linkspeed {inv} 200 -y"),
    c("verify-lab-not-up", "verify --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    c("preflight-lab-not-up", "preflight --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    c("reset-lab-not-up", "reset --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    # real hosts are never changed without a yes (and never reached here: no -y is given)
    c(
        "reset-real-hosts-unconfirmed",
        "reset {d}/inv.yml",
        2,
        r"reset changes real hosts .*pass -y",
        files={"inv.yml": inv()},
    ),
    c(
        "discover-merge-into-ini",
        "discover --inventory {d}/hosts.ini",
        2,
        r"discover merges the cables into a single-file inventory",
        files={"hosts.ini": "a ansible_host=10.0.0.1\n[all:vars]\nsparkfab={'cluster': 'x'}\n"},
    ),
    c(
        "lab-wire-not-up",
        "lab wire {d}/inv.yml --cut cables[0]",
        2,
        r"lab hostile4 is not up",
        files={"inv.yml": inv()},
    ),
    c(
        "serve-unknown-instance",
        "serve start {d}/i.yml --instance nope",
        2,
        r"--instance nope: sw16 has the instance\(s\) glm-a, glm-b",
        files={"i.yml": (REPO / "inventory/switch16-crs804-100.yml").read_text()},
    ),
    c("discover-ssh-config-missing", "discover a b --ssh-config {d}/nope", 5, r"nope"),
    c(
        "discover-inventory-bad",
        "discover --inventory {d}/inv.yml",
        2,
        r"all\.vars",
        files={"inv.yml": "all:\n  vars: [1]\n"},
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
