"""serve's and linkspeed's whole-run bound never cuts a health wait short: the health wait
expires first, with its own message and the engine log's last lines."""

from __future__ import annotations

import pytest

from sparkfab.commands.common import RUN_TIMEOUT_S, TASK_TIMEOUT_S, run_bound
from sparkfab.resolve import load_plan
from tests.conftest import REPO


@pytest.mark.parametrize("inventory", ["ring4.yml", "switch8-crs804-200.yml", "pair-1cable.yml"])
def test_the_run_outlasts_the_longest_health_wait_and_the_start_waves(inventory):
    plan = load_plan(str(REPO / "inventory" / inventory))
    longest = max(i.recipe.health_wait for i in plan.instances if i.recipe is not None)
    assert run_bound(plan) >= longest + 3 * TASK_TIMEOUT_S and run_bound(plan) >= RUN_TIMEOUT_S


def test_serve_and_linkspeed_take_the_bound_from_the_plan_and_apply_keeps_its_own():
    from sparkfab.cli import parser as cli_parser

    parser = cli_parser()
    assert parser.parse_args(["serve", "start", "inventory/ring4.yml"]).timeout is None
    assert parser.parse_args(["linkspeed", "inventory/ring4.yml", "100e"]).timeout is None
    assert parser.parse_args(["apply", "inventory/ring4.yml"]).timeout == RUN_TIMEOUT_S
    assert parser.parse_args(["serve", "start", "inventory/ring4.yml", "--timeout", "60"]).timeout == 60
