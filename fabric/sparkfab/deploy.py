"""The deploy seam: one typed wrapper around ansible_runner.run.

Known traps handled here: the venv's bin/ goes on the run's PATH (runner execs `ansible-playbook`),
`suppress_env_files=True` and a fresh `ident` per run (stale env/cmdline files once turned
an apply into a silent check run), and `stats` is None when the run never started.
"""

from __future__ import annotations

import difflib
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkfab.errors import DeployError
from sparkfab.launchers import repo_dir
from sparkfab.paths import state_dir

Event = dict[str, Any]


@dataclass(frozen=True)
class HostResult:
    """One host's tally of a run so far (each event gives a new one)."""

    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    failed_task: str | None = None
    message: str = ""
    task: str = ""
    changed_tasks: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        return "changed" if self.changed else "ok"


@dataclass(frozen=True)
class RunResult:
    rc: int
    status: str
    hosts: dict[str, HostResult]
    diffs: tuple[str, ...] = ()
    artifacts: str = ""

    @property
    def failures(self) -> list[HostResult]:
        return [h for h in self.hosts.values() if h.failed or h.unreachable]


class Collector:
    """ansible-runner's event handler: each host's tally and the diffs of changed files."""

    def __init__(self, hosts: list[str], on_update: Callable[[dict[str, HostResult]], None] | None) -> None:
        self.hosts = {h: HostResult(h) for h in hosts}
        self.diffs: list[str] = []
        self.on_update = on_update

    def __call__(self, ev: Event) -> bool:
        kind = ev.get("event", "")
        data = ev.get("event_data", {})
        host = data.get("host") or data.get("remote_addr")
        if host is not None and host not in self.hosts:
            self.hosts[host] = HostResult(host)
        h = self.hosts.get(host) if host else None
        if h is not None:
            self.hosts[h.host] = self._count(kind, data, h)
        if self.on_update is not None and kind.startswith(("runner_on", "playbook_on_task_start")):
            self.on_update(self.hosts)
        return True

    def _count(self, kind: str, data: dict[str, Any], h: HostResult) -> HostResult:
        res = data.get("res", {}) or {}
        task = data.get("task", "")
        h = replace(h, task=task)
        if kind == "runner_on_ok":
            self._diff(h.host, task, res)
            changed = bool(res.get("changed"))
            tasks = (*h.changed_tasks, task) if changed else h.changed_tasks
            return replace(h, ok=h.ok + 1, changed=h.changed + changed, changed_tasks=tasks)
        if kind == "runner_on_failed" and not data.get("ignore_errors"):
            return replace(
                h, failed=h.failed + 1, failed_task=h.failed_task or task, message=h.message or _failure_text(res)
            )
        if kind == "runner_on_unreachable":
            return replace(
                h,
                unreachable=h.unreachable + 1,
                failed_task=h.failed_task or task,
                message=str(res.get("msg", ""))[:400],
            )
        if kind == "runner_on_skipped":
            return replace(h, skipped=h.skipped + 1)
        return h

    def _diff(self, host: str, task: str, res: dict[str, Any]) -> None:
        diffs = res.get("diff") or []
        diffs = list(diffs) if isinstance(diffs, list) else [diffs]
        for item in res.get("results", []) or []:
            if isinstance(item, dict) and item.get("diff"):
                diffs += item["diff"] if isinstance(item["diff"], list) else [item["diff"]]
        for d in diffs:
            if isinstance(d, dict) and (d.get("before") != d.get("after")):
                head = d.get("after_header") or d.get("before_header") or task
                lines = difflib.unified_diff(
                    str(d.get("before", "")).splitlines(True),
                    str(d.get("after", "")).splitlines(True),
                    f"{host}:{d.get('before_header') or head} (now)",
                    f"{host}:{head} (planned)",
                )
                self.diffs.append("".join(lines))


def _failure_text(res: dict[str, Any]) -> str:
    """The first useful message of a failed task (for loops: the failed item's).

    Ansible leaves `msg` out when a changed_when/failed_when expression itself failed, and
    its own text is then "Unknown error"; the expression's error and the output say more.
    """
    for item in res.get("results", []) or []:
        if isinstance(item, dict) and item.get("failed"):
            res = item
            break
    parts = [str(res[k]) for k in ("msg", "changed_when_result", "failed_when_result") if isinstance(res.get(k), str)]
    for stream in ("stderr", "stdout"):
        text = str(res.get(stream) or "").strip()
        if text and (stream == "stderr" or not parts):
            parts.append(f"{stream}: {text[-300:]}")
    return "; ".join(parts)[:600]


def run_playbook(
    playbook: str,
    inventory: Path,
    cluster: str,
    *,
    check: bool = False,
    diff: bool = False,
    limit: str | None = None,
    extravars: dict[str, Any] | None = None,
    on_update: Callable[[dict[str, HostResult]], None] | None = None,
    hosts: list[str] | None = None,
    workdir: Path | None = None,
) -> RunResult:
    import ansible_runner

    bindir = str(Path(sys.executable).parent)
    work = workdir or state_dir(cluster)
    pdd = work / "runner"
    pdd.mkdir(parents=True, exist_ok=True)
    cmdline = " ".join(x for x in ("--check" if check else "", "--diff" if diff or check else "") if x)
    collector = Collector(hosts or [], on_update)
    envvars = {
        "ANSIBLE_CONFIG": str(repo_dir("ansible.cfg")),
        "ANSIBLE_ROLES_PATH": str(repo_dir("roles")),
        # runner execs `ansible-playbook`: the one beside this Python (the process's PATH stays as it is)
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        # multiplexed SSH sockets live with the cluster's state: a rebuilt lab never reuses a master
        # connection to a namespace that is gone
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"),
    }
    r = ansible_runner.run(
        private_data_dir=str(pdd),
        project_dir=str(repo_dir("playbooks")),
        playbook=playbook,
        inventory=str(inventory),
        cmdline=cmdline or None,
        limit=limit,
        extravars=extravars or {},
        envvars=envvars,
        ident=f"{playbook.removesuffix('.yml')}-{uuid.uuid4().hex[:8]}",
        quiet=True,
        suppress_env_files=True,
        rotate_artifacts=10,
        event_handler=collector,
        forks=32,
    )
    if r.stats is None and not collector.hosts:
        raise_if_not_started(r)
    if r.rc != 0 and not any(h.failed or h.unreachable for h in collector.hosts.values()):
        raise_if_not_started(r)  # Ansible stopped before any host failed (a playbook or role error)
    return RunResult(r.rc, r.status, dict(collector.hosts), tuple(collector.diffs), str(Path(r.config.artifact_dir)))


def raise_if_not_started(r: Any) -> None:
    out = ""
    try:
        out = r.stdout.read()[-2000:]
    except Exception:
        pass
    raise DeployError(f"ansible-playbook failed before any host did (rc {r.rc}, status {r.status}): {out}")
