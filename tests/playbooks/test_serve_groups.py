"""serve.yml's decision per host (playbooks/filter_plugins/sparkfab_serve.py), for every action:
which hosts stop, start in which wave, wait for health, or are refused for a silent rank. The
playbook itself runs it under Ansible in tests/slow/test_serve_play.py and the lab tests."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("sparkfab_serve", REPO / "playbooks/filter_plugins/sparkfab_serve.py")
assert _spec and _spec.loader
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)


def _vars(probe: str, rank: int, first: object = False, health: str | None = None, instance: str | None = "glm"):
    return {
        "sparkfab_instance": instance,
        "sparkfab_rank": rank,
        "sparkfab_start_first": first,
        "sparkfab_health_url": health,
        "sparkfab_serve_probe": {"stdout": probe},
    }


def _groups(hostvars, wanted, answered=None):
    answered = list(hostvars) if answered is None else answered
    return {d["host"]: d["groups"] for d in serve.serve_groups(answered, hostvars, list(hostvars), wanted)}


@pytest.mark.parametrize(
    ("wanted", "probes", "expect"),
    [
        # start: only what does not run starts; rank 0 (second wave: vLLM's workers go first) waits for health
        (
            "start",
            ("stopped", "stopped"),
            {"r0": ["sparkfab_serve_second", "sparkfab_serve_health"], "r1": ["sparkfab_serve_first"]},
        ),
        ("start", ("running", "stopped"), {"r0": [], "r1": ["sparkfab_serve_first"]}),
        ("stop", ("running", "running"), {"r0": ["sparkfab_serve_stop"], "r1": ["sparkfab_serve_stop"]}),
        (
            "restart",
            ("stopped", "running"),
            {
                "r0": ["sparkfab_serve_stop", "sparkfab_serve_second", "sparkfab_serve_health"],
                "r1": ["sparkfab_serve_stop", "sparkfab_serve_first"],
            },
        ),
        # a flip restarts what runs, and what an earlier flip stopped and did not start again (resume)
        ("restart-if-running", ("stopped", "stopped"), {"r0": [], "r1": []}),
        (
            "restart-if-running",
            ("resume", "running"),
            {
                "r0": ["sparkfab_serve_stop", "sparkfab_serve_second", "sparkfab_serve_health"],
                "r1": ["sparkfab_serve_stop", "sparkfab_serve_first"],
            },
        ),
    ],
)
def test_each_action_puts_each_rank_into_its_groups(wanted, probes, expect):
    hostvars = {"r0": _vars(probes[0], 0, health="http://r0:8000/health"), "r1": _vars(probes[1], 1, first="yes")}
    assert _groups(hostvars, wanted) == expect


def test_a_silent_rank_refuses_its_instance_to_start_but_not_to_stop_and_not_another_instance():
    hostvars = {
        "a0": _vars("stopped", 0),
        "a1": _vars("stopped", 1),
        "b0": _vars("stopped", 0, instance="other"),
        "idle": _vars("", 0, instance=None),
    }
    decided = serve.serve_groups(["a0", "b0", "idle"], hostvars, list(hostvars), "start")
    assert decided == [
        {"host": "a0", "groups": ["sparkfab_serve_refused"], "gone": ["a1"]},
        {"host": "b0", "groups": ["sparkfab_serve_second"], "gone": []},
    ]
    assert _groups(hostvars, "stop", answered=["a0", "b0"]) == {
        "a0": ["sparkfab_serve_stop"],
        "b0": ["sparkfab_serve_stop"],
    }
