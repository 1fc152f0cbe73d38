"""A lab Spark's boot: how long it may take, the wait until it has booted and lets users log in,
what a boot that will not end says (systemd's jobs, its failed units' journal, the end of the
console), and starting again a machine that stopped without a word. `machine` starts and stops
the machine; this module waits on it (and `machine` never imports it)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable

from sparkfab.errors import LabError
from sparkfab.lab import machine

#: how long a lab Spark may take to boot: 3 s here alone, far more on a loaded 2-core machine
#: (SPARKFAB_LAB_BOOT_S for a larger lab: 32 Sparks booting together on 2 cores take longer)
BOOT_S = 180.0


def boot_s() -> float:
    text = os.environ.get("SPARKFAB_LAB_BOOT_S", "")
    try:
        value = float(text) if text else BOOT_S
    except ValueError:
        value = -1.0
    if not 1 <= value <= 7200:
        raise LabError(f"SPARKFAB_LAB_BOOT_S={text[:40]!r}: seconds a lab Spark may take to boot, 1-7200")
    return value


def wait_booted(m: machine.Machine, timeout: float | None = None) -> None:
    """Until the machine's boot has finished (`systemctl is-system-running --wait`) and it lets
    users log in (systemd-user-sessions has removed /run/nologin). A machine whose supervisor
    has ended, or whose boot ended without letting users in (no job left), will not boot: that
    is said at once, with its failed units' journal and the end of its console."""
    deadline = time.monotonic() + (boot_s() if timeout is None else timeout)
    last = "no answer"
    while time.monotonic() < deadline:
        ended = ""
        if machine.supervisor_pid(m) is None:
            tail = console_tail(m)
            # nothing on its console (its container never started), or its systemd had begun
            # (an nspawn that ended mid-boot: once in a clean-clone run, exit status 1): worth
            # another start; an error before the container (a mount) is not
            transient = not tail.strip() or SYSTEMD_BEGAN in tail
            error = StoppedSilently if transient else LabError
            how = machine.how_it_ended(m)
            raise error(f"{m.node.name} stopped while it booted{how}; its console ends:\n{tail or '  (nothing)'}")
        try:
            res = machine.run(m, "sh", "-c", "systemctl is-system-running --wait; test ! -e /run/nologin", timeout=10)
            state = res.stdout.strip()
            if state in ("running", "degraded"):
                if res.returncode == 0:
                    return
                state += ", /run/nologin still there"
                jobs, said = _boot_jobs(m)
                ended = said if jobs == [] else ""  # its boot has ended without letting users in
            last = f"{state or '-'} (exit {res.returncode}) {res.stderr.strip()[-200:]}"
        except (subprocess.TimeoutExpired, LabError) as exc:  # booting, or between two boots
            last = str(exc)[-200:]
        if ended:
            raise LabError(
                f"{m.node.name} finished booting but does not let users log in (console: {m.log}); "
                f"its state: {last}; {ended}; its console ends:\n{console_tail(m)}"
            )
        time.sleep(0.2)
    raise LabError(
        f"{m.node.name} did not finish booting within {timeout:.0f} s (console: {m.log}); "
        f"its state: {last}; {_boot_jobs(m)[1]}; its console ends:\n{console_tail(m)}"
    )


class StoppedSilently(LabError):
    """The machine's supervisor ended before the machine printed a line (its container never
    started: seen in two long runs on a loaded 2-core machine, once with its one retry too), or
    after its systemd had begun to boot (nspawn exited with 1 mid-boot in a clean-clone run):
    worth starting again."""


#: what the machine's systemd prints first on its console
SYSTEMD_BEGAN = "running in system mode"
#: how often a machine that stopped without a word is started (the first start included)
STARTS = 3
#: how long to wait before each start again: in one clean-clone CI run all three starts of a
#: Spark ended within 4 s (nspawn exit 1 just after systemd's first lines), in a lab booted right
#: after a lab of the same name went down; whatever that lab left then (its cgroups are removed
#: as their processes finish dying) was still there at once, so the starts again leave it time
RESTART_WAIT_S = (1.0, 3.0)


def boot(m: machine.Machine, start_again: Callable[[], int]) -> int | None:
    """Wait for `m`'s boot; a machine that stopped before printing anything is started again,
    up to STARTS starts in all, after RESTART_WAIT_S (`start_again` returns the new supervisor's
    pid). Returns the last such pid, if any."""
    pid = None
    for i in range(STARTS - 1):
        try:
            wait_booted(m)
            return pid
        except StoppedSilently:
            time.sleep(RESTART_WAIT_S[i])
            pid = start_again()
    wait_booted(m)
    return pid


def _boot_jobs(m: machine.Machine) -> tuple[list[str] | None, str]:
    """What systemd in the machine still waits for (its job queue; None when it could not be
    read), and that with its failed units and their journal, in words."""
    try:
        res = machine.run(m, "systemctl", "list-jobs", "--no-legend", "--no-pager", timeout=10)
        failed = machine.run(m, "systemctl", "--failed", "--no-legend", "--no-pager", "--plain", timeout=10)
    except (subprocess.TimeoutExpired, LabError) as exc:
        return None, f"its jobs could not be read ({exc})"
    jobs = [" ".join(line.split()[1:3]) for line in res.stdout.splitlines() if line.strip()]
    units = [line.split()[0] for line in failed.stdout.splitlines() if line.strip()][:8]
    said = ""
    if units:  # what the failed units said of themselves
        args = [a for u in units for a in ("-u", u)]
        try:
            log = machine.run(
                m, "journalctl", "-b", "--no-pager", "-o", "short-monotonic", "-n", "20", *args, timeout=10
            )
            said = "; their journal:\n" + "\n".join("  " + line for line in log.stdout.splitlines()[-20:])
        except (subprocess.TimeoutExpired, LabError) as exc:
            said = f"; their journal could not be read ({exc})"
    text = f"systemd still runs: {', '.join(jobs[:8]) or 'no job'}; failed units: {', '.join(units) or 'none'}{said}"
    return jobs, text


def console_tail(m: machine.Machine, lines: int = 12) -> str:
    try:
        text = m.log.read_text(errors="replace")
    except OSError:
        return "(no console)"
    plain = [line.strip() for line in re.sub(r"\x1b(\[[0-9;?]*[A-Za-z]|[A-Z])", "", text).splitlines()]
    return "\n".join("  " + line for line in [x for x in plain if x][-lines:])
