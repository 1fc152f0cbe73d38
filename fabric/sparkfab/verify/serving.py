"""Whether each rank's engine runs, read on its host as `serve` leaves it: a container
`sparkfab-<instance>` (the docker runtime; `serve stop` removes it, so one that exited died) or
a pid in `/run/sparkfab/<instance>.pid` (the process runtime; `serve stop` removes the file, so
a file whose process is gone names a death, and a reboot clears /run).

`serve status` prints these; verify turns them into one `engine` row per rank of an instance
that serves on any rank, so a dead rank fails verify while an instance that is stopped
everywhere is not a failure."""

from __future__ import annotations

import concurrent.futures as cf
import shlex
from dataclasses import asdict, dataclass
from typing import Any

from sparkfab import connection
from sparkfab.facts.remote import Remote
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import PID_DIR
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, Result

RUNNING, DEAD, STOPPED, UNKNOWN = "running", "dead", "stopped", "unknown"


@dataclass(frozen=True)
class RankState:
    instance: str
    rank: int
    host: str
    runtime: str
    state: str  # running, dead (exited without `serve stop`), stopped, unknown (host not read)
    since: str  # when it started (running) or ended (dead), as the host says; "" when not known
    detail: str  # the pid or container, its exit code, or why the host could not be read

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe(instance: str, runtime: str) -> str:
    """The shell command that prints one line `STATE|SINCE|DETAIL` for the instance's engine."""
    if runtime == "docker":
        name = shlex.quote(f"sparkfab-{instance}")
        fmt = shlex.quote("{{.State.Status}}|{{.State.StartedAt}}|{{.State.FinishedAt}}|{{.State.ExitCode}}")
        return (
            f"out=$(docker inspect -f {fmt} {name} 2>/dev/null) || {{ echo 'stopped||no container'; exit 0; }}; "
            "st=${out%%|*}; rest=${out#*|}; started=${rest%%|*}; rest=${rest#*|}; "
            "finished=${rest%%|*}; code=${rest#*|}; "
            f'case "$st" in running) echo "running|$started|container {name}" ;; '
            f'*) echo "dead|$finished|container {name} $st, exit code $code" ;; esac'
        )
    pidfile = shlex.quote(f"{PID_DIR}/{instance}.pid")
    return (
        f"[ -s {pidfile} ] || {{ echo 'stopped||no pid file'; exit 0; }}; pid=$(cat {pidfile}); "
        'if kill -0 "$pid" 2>/dev/null; then echo "running|$(ps -o lstart= -p "$pid" | sed "s/^ *//")|pid $pid"; '
        'else echo "dead||pid $pid is gone (its pid file is left)"; fi'
    )


def parse(line: str) -> tuple[str, str, str]:
    parts = (line.strip().splitlines() or [""])[-1].split("|", 2)
    if len(parts) != 3 or parts[0] not in (RUNNING, DEAD, STOPPED):
        return UNKNOWN, "", f"unexpected answer: {line.strip()[:120]!r}"
    return parts[0], parts[1], parts[2]


def rank_states(plan: Plan, remotes: dict[str, Remote], instance: str | None = None) -> list[RankState]:
    """Every rank of every instance (or of `instance`) with a launcher, read in parallel."""
    todo = [
        (inst, r.rank, r.host)
        for inst in plan.instances
        if inst.recipe is not None and (instance is None or inst.name == instance)
        for r in inst.ranks
    ]

    def one(item: tuple[Instance, int, str]) -> RankState:
        inst, rank, host = item
        runtime = inst.runtime or "docker"
        try:
            th = connection.as_root(remotes[host])
            res = th.run(probe(inst.name, runtime))
            state, since, detail = parse(res.stdout) if res.rc == 0 else (UNKNOWN, "", res.stderr.strip()[:200])
        except Exception as exc:  # unreachable, no sudo: the state is not known
            state, since, detail = UNKNOWN, "", str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return RankState(inst.name, rank, host, runtime, state, since, detail)

    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(one, todo))


def summary(states: list[RankState]) -> str:
    """An instance's state from its ranks': serving, stopped, or degraded (some ranks not running)."""
    kinds = {s.state for s in states}
    if kinds == {RUNNING}:
        return "serving"
    if kinds == {STOPPED}:
        return "stopped"
    return "degraded"


def results(states: list[RankState]) -> list[Result]:
    """verify's rows: for an instance with any rank running or dead, every rank must run."""
    out = []
    for name in dict.fromkeys(s.instance for s in states):
        ranks = [s for s in states if s.instance == name]
        if not any(s.state in (RUNNING, DEAD) for s in ranks):
            continue  # not serving anywhere: nothing is expected to run
        for s in ranks:
            ok = s.state == RUNNING
            why = (
                ""
                if ok
                else f"rank {s.rank}: {s.detail}; `sparkfab serve restart --instance {name}` starts it in order"
            )
            out.append(
                Result(
                    check=Check.ENGINE,
                    host=s.host,
                    subject=f"{name} rank {s.rank}",
                    expected=RUNNING,
                    actual=s.state,
                    status=PASS if ok else FAIL,
                    detail=why,
                )
            )
    return out
