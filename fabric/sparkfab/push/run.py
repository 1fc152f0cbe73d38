"""The deploy seam: one typed wrapper around ansible_runner.run.

Known traps handled here: the venv's bin/ goes on the run's PATH (runner execs `ansible-playbook`),
`suppress_env_files=True` and a fresh `ident` per run (stale env/cmdline files once turned
an apply into a silent check run), and `stats` is None when the run never started.

Secrets never pass through ansible-runner: it writes the whole environment of the run into
`artifacts/<ident>/command` (with `suppress_env_files` too), so the run gets only the variables
Ansible needs (`RUN_ENV`), and the secrets the hosts need reach the secrets task through a file
that exists only in memory (`secrets_source`).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkfab.errors import DeployError
from sparkfab.paths import repo_dir, state_dir
from sparkfab.proc import Terminated, signals_held
from sparkfab.push import collection, processes
from sparkfab.push.env import config_env, run_env, strategy_env, strategy_vars
from sparkfab.push.passthrough import PassThrough
from sparkfab.push.tasks import SAID


@contextlib.contextmanager
def secrets_source(names: list[str]) -> Iterator[str | None]:
    """A path the secrets task reads `names`' values from (a JSON object of those set here), for
    the length of a run: a memory-only file (memfd) this process holds open, read through
    /proc/<pid>/fd by Ansible's file lookup; where there is none, a file in a private directory
    removed after the run. None when no secret is set."""
    values = {n: os.environ[n] for n in dict.fromkeys(names) if os.environ.get(n)}
    if not values:
        yield None
        return
    data = json.dumps(values).encode()
    if hasattr(os, "memfd_create") and Path(f"/proc/{os.getpid()}/fd").is_dir():
        fd = os.memfd_create("sparkfab-secrets", 0)
        try:
            os.write(fd, data)
            yield f"/proc/{os.getpid()}/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="sparkfab-") as d:
        path = Path(d) / "secrets.json"
        path.touch(mode=0o600)
        path.write_bytes(data)
        yield str(path)


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
    skipped_tasks: tuple[str, ...] = ()  # what --check passes over (a command's task) shows what would run
    said: tuple[str, ...] = ()  # the message of each task of `tasks.SAID` that ran (a warm-up's time)

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
        if self.on_update is not None and kind.startswith(("runner_on", "runner_retry", "playbook_on_task_start")):
            self.on_update(self.hosts)
        return True

    def _count(self, kind: str, data: dict[str, Any], h: HostResult) -> HostResult:
        res = data.get("res", {}) or {}
        task = data.get("task", "")
        h = replace(h, task=task)
        if kind == "runner_retry":  # a wait in progress: say how far it is
            return replace(h, task=f"{task} (try {res.get('attempts', '?')} of {res.get('retries', '?')})")
        if kind == "runner_on_ok":
            self._diff(h.host, task, res)
            changed = bool(res.get("changed"))
            tasks = (*h.changed_tasks, task) if changed else h.changed_tasks
            said = h.said
            if task.startswith(SAID) and (out := str(res.get("msg") or "").strip()):
                said = (*said, out.splitlines()[-1][:300])
            return replace(h, ok=h.ok + 1, changed=h.changed + changed, changed_tasks=tasks, said=said)
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
            return replace(h, skipped=h.skipped + 1, skipped_tasks=(*h.skipped_tasks, task))
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
    # a command's own "non-zero return code" says nothing: what it printed does
    generic = parts == ["non-zero return code"]
    for stream in ("stderr", "stdout"):
        text = str(res.get(stream) or "").strip()
        if text and (stream == "stderr" or not parts or generic):
            parts.append(f"{stream}: {text[-500:]}")
    return "; ".join(parts)[-700:]


def run_playbook(
    playbook: str,
    inventory: Path,
    cluster: str,
    *,
    check: bool = False,
    diff: bool = False,
    limit: str | None = None,
    extravars: dict[str, Any] | None = None,
    timeout: float | None = None,
    on_update: Callable[[dict[str, HostResult]], None] | None = None,
    hosts: list[str] | None = None,
    workdir: Path | None = None,
    secrets: list[str] | None = None,
    verbosity: int = 0,
    passthrough: PassThrough | None = None,
) -> RunResult:
    """Run `playbook` (with `passthrough`: the user's -e, --tags and --skip-tags); `secrets`
    names the variables of this environment the hosts' secrets file gets (read by the secrets
    task from `secrets_source`, never through the run's environment).
    With `verbosity` (sparkfab's -v count), Ansible's own output is shown, at its -v level of
    the same count (-v: the tasks and their results; -vvv: the connections).
    A run past `timeout` seconds is ended (everything it started) and raises DeployError naming
    the step each host was at."""
    with secrets_source(secrets or []) as source:
        xv = {**(extravars or {}), **({"sparkfab_secrets_source": source} if source else {})}
        flags = ["--check"] if check else []
        flags += ["--diff"] if diff or check else []
        flags += (passthrough or PassThrough()).argv()
        return _run(playbook, inventory, cluster, flags, limit, xv, timeout, on_update, hosts, workdir, verbosity)


def _run(
    playbook: str,
    inventory: Path,
    cluster: str,
    flags: list[str],
    limit: str | None,
    extravars: dict[str, Any],
    timeout: float | None,
    on_update: Callable[[dict[str, HostResult]], None] | None,
    hosts: list[str] | None,
    workdir: Path | None,
    verbosity: int = 0,
) -> RunResult:
    bindir = str(Path(sys.executable).parent)
    work = workdir or state_dir(cluster)
    pdd = work / "runner"
    pdd.mkdir(parents=True, exist_ok=True)
    cmdline = shlex.join(flags)  # runner splits it as a shell would
    collector = Collector(hosts or [], on_update)
    in_main = threading.current_thread() is threading.main_thread()
    tether = [str(processes.tethered(pdd, Path(bindir) / "ansible-playbook"))] if in_main else []
    # the content runs as the collection sparkfab.fabric, laid out in the cluster's state
    collections = collection.for_runs(work)
    envvars = {
        # the user's ansible.cfg, merged with what the playbooks need (sparkfab's own without one)
        **config_env(repo_dir("ansible.cfg"), collections, dict(os.environ), Path.cwd()),
        # runner execs `ansible-playbook`: the one beside this Python (the process's PATH stays as
        # it is), from the verb's thread through a wrapper that makes it die with this process
        "PATH": os.pathsep.join([*tether, bindir, os.environ.get("PATH", "")]),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        # multiplexed SSH sockets live with the cluster's state: a rebuilt lab never reuses a master
        # connection to a namespace that is gone
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"),
        # ansible-runner turns host-key checking off unless told: a Spark whose key changed is
        # refused here as verify and preflight refuse it (ansible.cfg: accept-new)
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        **strategy_env(dict(os.environ)),
        # every process of this run carries it (its workers too): how the next run finds what a
        # controller crash left behind
        processes.RUN_MARK: str(pdd),
    }
    processes.end_leftovers(pdd)
    tmp = processes.scratch(work)
    if tmp is not None:
        envvars["TMPDIR"] = str(tmp)
    # Ctrl-C and SIGTERM during the run: sparkfab's handlers (ansible-runner's own would stay
    # installed after the run) flag the stop, the cancel callback ends ansible-playbook with
    # everything it started, and the verb ends as interrupted with the table so far.
    # The same way out for a run past its bound.
    deadline = None if timeout is None else time.monotonic() + timeout
    late: list[bool] = []
    with signals_held() as stopped:

        def cancelled() -> bool:  # runner asks every half second
            if deadline is not None and not late and time.monotonic() > deadline:
                late.append(True)
            if stopped or late:
                processes.end_playbooks()
            return bool(stopped or late)

        xv = {**extravars, **strategy_vars({**os.environ, **envvars})}
        project = collection.home(collections) / "playbooks"
        r = _start(pdd, project, playbook, inventory, cmdline, limit, xv, envvars, collector, cancelled, verbosity)
    result = RunResult(r.rc, r.status, dict(collector.hosts), tuple(collector.diffs), str(Path(r.config.artifact_dir)))
    if stopped:
        ended: KeyboardInterrupt = Terminated() if stopped[0] == signal.SIGTERM else KeyboardInterrupt()
        raise Interrupted(result) from ended
    if late:
        steps = [
            f"{h.host}: {'at' if h.state in ('ok', 'changed') else h.state + ' at'} "
            f"'{h.failed_task or h.task or 'its first task'}'"
            for h in sorted(result.hosts.values(), key=lambda x: x.host)
        ]
        head = f"{Path(playbook).name} did not finish within {timeout:.0f} s (--timeout); it ended with:"
        raise DeployError("\n  ".join([head, *steps]) + f"\n  (artifacts: {result.artifacts})")
    if r.stats is None and not collector.hosts:
        raise_if_not_started(r)
    if r.rc != 0 and not any(h.failed or h.unreachable for h in collector.hosts.values()):
        raise_if_not_started(r)  # Ansible stopped before any host failed (a playbook or role error)
    return result


class Interrupted(KeyboardInterrupt):
    """A run ended by Ctrl-C or SIGTERM, with what each host had done so far; its cause is the
    KeyboardInterrupt or Terminated the verb ends with."""

    def __init__(self, result: RunResult) -> None:
        super().__init__("interrupted")
        self.result = result


def _start(
    pdd: Path,
    project: Path,
    playbook: str,
    inventory: Path,
    cmdline: str,
    limit: str | None,
    extravars: dict[str, Any],
    envvars: dict[str, str],
    collector: Collector,
    cancelled: Callable[[], bool],
    verbosity: int = 0,
) -> Any:
    import ansible_runner.interface

    # how often runner asks whether the run was cancelled (it reads settings from this file only)
    (pdd / "env").mkdir(exist_ok=True)
    (pdd / "env" / "settings").write_text(json.dumps({"pexpect_timeout": 0.5}))
    r = ansible_runner.interface.init_runner(
        private_data_dir=str(pdd),
        project_dir=str(project),
        playbook=playbook,
        inventory=str(inventory),
        cmdline=cmdline or None,
        limit=limit,
        extravars=extravars,
        envvars=envvars,
        ident=f"{Path(playbook).stem}-{uuid.uuid4().hex[:8]}",
        quiet=verbosity == 0,  # else Ansible's own output, on this process's stdout
        verbosity=min(verbosity, 4) or None,
        suppress_env_files=True,
        rotate_artifacts=10,
        event_handler=collector,
        cancel_callback=cancelled,
        forks=32,
    )
    # runner seeded the run's environment with all of ours (and added its own callback settings):
    # of ours, the run keeps what Ansible needs
    keep = run_env(dict(os.environ))
    r.config.env = {k: v for k, v in r.config.env.items() if k in keep or os.environ.get(k) != v or k in envvars}
    r.run()
    return r


def raise_if_not_started(r: Any) -> None:
    out = ""
    try:
        out = r.stdout.read()[-2000:]
    except Exception:
        pass
    raise DeployError(f"ansible-playbook failed before any host did (rc {r.rc}, status {r.status}): {out}")
