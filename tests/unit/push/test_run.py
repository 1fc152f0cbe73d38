"""The deploy seam's reading of ansible-runner events: counts, failure messages, diffs."""

import configparser
from pathlib import Path

import pytest

from sparkfab.push.env import KEEPALIVE, strategy_env, strategy_vars
from sparkfab.push.run import Collector
from sparkfab.render.sshconfig import multiplexed
from tests.conftest import REPO


def _ev(kind, host, task="T", **res):
    return {"event": kind, "event_data": {"host": host, "task": task, "res": res}}


def test_failure_when_changed_when_itself_failed_names_the_expression_error():
    # What Ansible returns when changed_when raised: failed, no msg ("Unknown error" on screen).
    c = Collector(["a"], None)
    c(
        _ev(
            "runner_on_failed",
            "a",
            "Files | Install",
            failed=True,
            stdout="",
            changed_when_result="Error while resolving value for 'changed_when': Expecting value",
        )
    )
    h = c.hosts["a"]
    assert h.state == "failed" and h.failed_task == "Files | Install"
    assert h.message == "Error while resolving value for 'changed_when': Expecting value"


def test_failure_keeps_msg_and_the_tail_of_stderr():
    c = Collector(["a"], None)
    c(_ev("runner_on_failed", "a", msg="non-zero return code", rc=1, stderr="x" * 1000 + "\nBOOM"))
    msg = c.hosts["a"].message
    assert msg.startswith("non-zero return code; stderr: ") and msg.endswith("BOOM") and len(msg) <= 600


def test_failure_without_msg_shows_stdout():
    c = Collector(["a"], None)
    c(_ev("runner_on_failed", "a", failed=True, stdout="half a line"))
    assert c.hosts["a"].message == "stdout: half a line"


def test_loop_failure_reports_the_failed_item():
    c = Collector(["a"], None)
    c(_ev("runner_on_failed", "a", results=[{"failed": False, "msg": "fine"}, {"failed": True, "msg": "item 2 broke"}]))
    assert c.hosts["a"].message == "item 2 broke"


def test_ignored_failures_and_unreachable_hosts():
    c = Collector(["a", "b"], None)
    ev = _ev("runner_on_failed", "a", msg="nope")
    ev["event_data"]["ignore_errors"] = True
    c(ev)
    c(_ev("runner_on_unreachable", "b", msg="ssh: connect to host 198.18.0.2 port 22: Connection refused"))
    assert c.hosts["a"].state == "ok"
    assert c.hosts["b"].state == "unreachable" and "Connection refused" in c.hosts["b"].message


def test_module_diffs_become_host_qualified_unified_diffs():
    c = Collector(["a"], None)
    c(
        _ev(
            "runner_on_ok",
            "a",
            "Files | Install",
            changed=True,
            diff=[
                {"before_header": "/etc/x", "after_header": "/etc/x", "before": "1\n", "after": "2\n"},
                {"before": "same\n", "after": "same\n"},
            ],
        )
    )
    assert c.hosts["a"].changed_tasks == ("Files | Install",)
    assert len(c.diffs) == 1
    assert "--- a:/etc/x (now)\n+++ a:/etc/x (planned)\n" in c.diffs[0] and "-1\n+2\n" in c.diffs[0]


def test_instance_limit_targets_one_instances_hosts():
    from sparkfab.cluster.limits import instance_limit
    from sparkfab.errors import UsageError
    from sparkfab.resolve import load_plan
    from tests.conftest import REPO

    plan = load_plan(str(REPO / "inventory/switch16-crs804-100.yml"))
    assert instance_limit(plan, "glm-b", None) == ",".join(f"spark-{i:02d}" for i in range(9, 17))
    assert instance_limit(plan, "glm-a", "spark-0[1-2]").endswith(":&spark-0[1-2]")
    assert instance_limit(plan, None, "spark-01") == "spark-01"
    with pytest.raises(UsageError, match="has the instance"):
        instance_limit(plan, "glm-c", None)


def test_the_runs_take_mitogens_strategy_unless_the_user_chose_one() -> None:
    env = strategy_env({})
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    # the plugin Ansible will load by that name is there
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()
    assert strategy_env({"ANSIBLE_STRATEGY": "free"}) == {}
    assert strategy_env({"SPARKFAB_MITOGEN": "0"}) == {}


def test_a_silent_host_is_dropped_after_the_same_keepalives_under_every_strategy() -> None:
    """Mitogen puts its own keepalive options (30 s x 10) ahead of ansible.cfg's, and ssh takes
    the first: under Mitogen the run tells it ansible.cfg's numbers, which are those of
    sparkfab's own ssh_config too (a host silent for 30 s is gone, whoever connects)."""
    interval, count = KEEPALIVE
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "ansible.cfg")
    ssh_args = cfg["ssh_connection"]["ssh_args"]
    assert f"ServerAliveInterval={interval}" in ssh_args and f"ServerAliveCountMax={count}" in ssh_args
    own = multiplexed(Path("/x"))
    assert f"ServerAliveInterval {interval}" in own and f"ServerAliveCountMax {count}" in own
    assert strategy_vars(strategy_env({})) == {
        "mitogen_ssh_keepalive_interval": interval,
        "mitogen_ssh_keepalive_count": count,
    }
    assert strategy_vars(strategy_env({"SPARKFAB_MITOGEN": "0"})) == {}


def test_without_a_terminal_each_host_and_step_is_a_line_as_it_ends(capsys):
    """A line per host when its task changes or it fails; a wait's tries at most one line per 30 s
    per host (a health wait of minutes is not a line every two seconds)."""
    from sparkfab.commands.runs import StepLines
    from sparkfab.push.run import HostResult

    now = [0.0]
    lines = StepLines("serve.yml on ring4", clock=lambda: now[0])
    lines({"a": HostResult("a", task="Serve | Start"), "b": HostResult("b")})
    lines({"a": HostResult("a", task="Serve | Start"), "b": HostResult("b", task="Serve | Start")})
    for t in range(0, 70, 2):
        now[0] = float(t)
        lines({"a": HostResult("a", task=f"Serve | Wait for rank 0's health (try {t // 2 + 1} of 90)")})
    lines({"a": HostResult("a", failed=1, failed_task="Serve | Wait", task="Serve | Wait", message="engine\n exited")})
    out = capsys.readouterr().err.splitlines()
    assert out == [
        "serve.yml on ring4: a: Serve | Start",
        "serve.yml on ring4: b: Serve | Start",
        "serve.yml on ring4: a: Serve | Wait for rank 0's health (try 1 of 90)",
        "serve.yml on ring4: a: Serve | Wait for rank 0's health (try 16 of 90)",
        "serve.yml on ring4: a: Serve | Wait for rank 0's health (try 31 of 90)",
        "serve.yml on ring4: a: Serve | Wait: failed: engine exited",
    ]
