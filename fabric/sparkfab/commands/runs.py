"""A verb's Ansible run as people see it: the confirmation before real hosts change, the live
per-host table (without a terminal: a line per host and step), the failure that ends the verb
(with the fix where sparkfab knows it), and what a --check run passed over. apply, linkspeed,
reset (`deploy_cmd`) and serve (`serve_cmd`) share it."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sparkfab.cluster.target import Target
from sparkfab.commands.common import run_bound
from sparkfab.errors import DeployError, UsageError
from sparkfab.plan import Plan
from sparkfab.proc import Terminated
from sparkfab.push.passthrough import PassThrough, checked
from sparkfab.push.run import HostResult, Interrupted, RunResult, run_playbook

_err = Console(stderr=True, width=140)


def confirm(target: Target, args: argparse.Namespace, what: str, hosts: list[str] | None = None) -> None:
    if target.lab is not None or args.yes or getattr(args, "check", False):
        return
    plan = target.plan
    names = hosts if hosts is not None else [h.name for h in plan.hosts]
    if not sys.stdin.isatty():
        raise UsageError(f"{what} changes real hosts ({', '.join(names)}): pass -y to confirm")
    which = "" if len(names) == len(plan.hosts) else f" ({', '.join(names)})"
    answer = input(f"{what} on {len(names)} host(s) of {plan.cluster}{which}? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise UsageError("cancelled")


def host_table(hosts: dict[str, HostResult], title: str) -> Table:
    t = Table(title=title)
    for col in ("host", "state", "ok", "changed", "failed", "unreachable", "task"):
        t.add_column(col)
    for h in sorted(hosts.values(), key=lambda x: x.host):
        style = {"failed": "red", "unreachable": "red", "changed": "yellow"}.get(h.state, "green")
        t.add_row(
            h.host,
            Text(h.state, style=style),
            str(h.ok),
            str(h.changed),
            str(h.failed),
            str(h.unreachable),
            (h.failed_task or h.task)[:60],
        )
    return t


class StepLines:
    """Without a terminal (CI, a pipe, a log): one line per host as each of its tasks ends, and
    when it fails or is unreachable, so a run is seen as it goes; a wait's tries (a health wait)
    at most one line per `every` seconds per host."""

    def __init__(self, title: str, every: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.title, self.every, self.clock = title, every, clock
        self.seen: dict[str, tuple[str, int, int]] = {}
        self.said: dict[str, float] = {}

    def __call__(self, hosts: dict[str, HostResult]) -> None:
        for h in sorted(hosts.values(), key=lambda x: x.host):
            key = (h.task, h.failed, h.unreachable)
            if not h.task or self.seen.get(h.host) == key:
                continue
            before = self.seen.get(h.host, ("", 0, 0))
            now = self.clock()
            trying = " (try " in h.task and before[0].split(" (try ")[0] == h.task.split(" (try ")[0]
            if trying and key[1:] == before[1:] and now - self.said.get(h.host, -self.every) < self.every:
                continue
            self.seen[h.host], self.said[h.host] = key, now
            what = "unreachable" if h.unreachable > before[2] else "failed" if h.failed > before[1] else "ok"
            line = f"{self.title}: {h.host}: {h.failed_task or h.task}"
            if what != "ok":
                line += f": {what}: {' '.join(h.message.split())[:200]}"
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


@dataclass(frozen=True)
class RunOptions:
    """What a verb's flags ask of its Ansible runs, read from its arguments once, at the command
    boundary (`run_options`), before any host is contacted."""

    check: bool = False  # --check
    diff: bool = False  # --diff
    timeout: float | None = None  # --timeout; None: the plan's own bound (`run_bound`)
    verbose: int = 0  # -v: Ansible's own output instead of the table
    quiet: bool = False  # -q: no table at the end
    passthrough: PassThrough = field(default_factory=PassThrough)  # -e, --tags, --skip-tags, checked


def run_options(args: argparse.Namespace, whole: str | None = None) -> RunOptions:
    """The verb's run options; its -e, --tags and --skip-tags checked (`passthrough.checked`;
    `whole`: why the verb's play runs whole, which refuses tags)."""
    return RunOptions(
        check=getattr(args, "check", False),
        diff=getattr(args, "diff", False),
        timeout=getattr(args, "timeout", None),
        verbose=getattr(args, "verbose", 0),
        quiet=args.quiet,
        passthrough=checked(args.extra_vars, args.tags, args.skip_tags, whole),
    )


def run_with_progress(
    playbook: str,
    target: Target,
    tree: Path,
    opts: RunOptions,
    extravars: dict[str, object] | None = None,
    plan: Plan | None = None,
    secrets: list[str] | None = None,
    *,
    limit: str | None,
) -> RunResult:
    """Run `playbook` on the hosts of `plan` (the target's by default) that `limit` (an Ansible
    pattern, `@FILE`s resolved: `files_here`) selects, as `opts` asks, showing the per-host
    table as it goes."""
    plan = plan or target.plan
    names = [h.name for h in plan.hosts]
    title = f"{playbook} on {plan.cluster}"
    verbose = opts.verbose
    # with -v, Ansible's own output scrolls by instead of the live table; without a terminal,
    # a line per host and step
    live = None
    if _err.is_terminal and not verbose:
        live = Live(host_table({}, title), console=_err, refresh_per_second=4, transient=True)
    lines = StepLines(title) if not _err.is_terminal and not verbose and not opts.quiet else None

    def update(hosts: dict[str, HostResult]) -> None:
        if live is not None:
            live.update(host_table(hosts, title))
        if lines is not None:
            lines(hosts)

    if live is not None:
        live.start()
    try:
        result = run_playbook(
            playbook,
            tree / "inventory.yml",
            plan.cluster,
            check=opts.check,
            diff=opts.diff,
            limit=limit,
            extravars=extravars,
            timeout=run_bound(plan) if opts.timeout is None else opts.timeout,
            on_update=update,
            hosts=names,
            workdir=target.state,
            secrets=secrets,
            verbosity=verbose,
            passthrough=opts.passthrough,
        )
    except Interrupted as exc:  # the table so far, whatever -q says: the run ends part-way
        if live is not None:
            live.stop()
        how = "terminated" if isinstance(exc.__cause__, Terminated) else "interrupted"
        _err.print(host_table(exc.result.hosts, f"{title}: {how}, ansible-playbook ended"))
        raise
    finally:
        if live is not None:
            live.stop()
    if not opts.quiet:
        _err.print(host_table(result.hosts, title))
    return result


#: a failure that is the user's to fix on the host, not a deploy error (exit 2)
REFUSALS = ("foreign netplan file:",)


#: what ssh says when a host's key is not the one known for it (a reinstall, or someone else), and
#: what Mitogen's connection says for it (mitogen/ssh.py: hostkey_failed_msg)
KEY_CHANGED = (
    "REMOTE HOST IDENTIFICATION HAS CHANGED",
    "Host key verification failed",
    "SSH reported an unrecognized or mismatching host key",
)


def fail_if(result: RunResult, target: Target) -> None:
    """The failures of `result` as the verb's error: refusals as a usage error (exit 2), the rest
    as a deploy error, a changed host key with the command that accepts it, and an unreachable lab
    Spark with what the lab host sees of it."""
    refused = [h for h in result.failures if any(m in h.message for m in REFUSALS)]
    if refused:
        lines = [f"{h.host}: {h.message}" for h in refused]
        raise UsageError("\n  ".join(["apply refused on:", *lines]))
    if result.failures:
        lines = []
        for h in result.failures:
            if any(m in h.message for m in KEY_CHANGED):
                addr = target.plan.host(h.host).ansible.get("ansible_host", h.host)
                lines.append(
                    f"{h.host}: refused: its SSH host key is not the one known for {addr}; if the host was "
                    f"reinstalled, forget the old key (`ssh-keygen -R {addr}`, in the known_hosts file ssh "
                    "names) and run again"
                )
            else:
                lines.append(f"{h.host}: {h.state} at task '{h.failed_task}': {h.message}")
                why = target.unreachable_why(h.host) if h.state == "unreachable" else ""
                if why:
                    lines.append(f"  the lab's view of {h.host}: {why}")
        raise DeployError("\n  ".join(["deploy failed on:", *lines]) + f"\n  (artifacts: {result.artifacts})")


def say_said(result: RunResult) -> None:
    """What the run's hosts said in the tasks whose output the verbs show (`tasks.SAID`), a line
    each under the host's name: how long rank 0's warm-up took."""
    for h in sorted(result.hosts.values(), key=lambda h: h.host):
        for line in h.said:
            _err.print(f"{h.host}: {line}", highlight=False, markup=False)


def passed_over(result: RunResult, *tasks: str) -> list[str]:
    """The hosts on which --check passed over a task starting with one of `tasks` (a command's
    task is not run in check mode): where a real run would do it."""
    return sorted(h.host for h in result.hosts.values() if any(t.startswith(tasks) for t in h.skipped_tasks))
