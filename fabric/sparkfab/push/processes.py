"""The processes of an Ansible run: the tether that ties ansible-playbook and everything it
starts to the sparkfab that started it, the mark each of them carries, and how they end (a
cancel, a controller that was killed, what such a crash left behind)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sparkfab import proc


def tethered(pdd: Path, real: Path) -> Path:
    """A folder with an `ansible-playbook` that stays with the sparkfab that started it: a small
    supervisor that the kernel signals when the thread that started it ends (PR_SET_PDEATHSIG;
    the verb's main thread), and that adopts every orphan below it (PR_SET_CHILD_SUBREAPER), so
    that a sparkfab killed with SIGKILL, which no handler sees, leaves nothing behind: neither
    ansible-playbook nor the workers and Mitogen processes it started (each in a session of its
    own). It runs the real ansible-playbook as its child and exits as that child does."""
    folder = pdd / "tethered"
    folder.mkdir(exist_ok=True)
    script = folder / "ansible-playbook"
    fabric = Path(__file__).resolve().parent.parent
    script.write_text(
        f"#!{sys.executable}\n"
        "# written by sparkfab for its runs: ansible-playbook and all it starts end with the sparkfab that started it\n"
        "import ctypes, os, signal, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
        "libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans below come here\n"
        f"if os.getppid() != {os.getpid()}:\n"
        "    sys.exit('sparkfab ended before ansible-playbook started')\n"
        f"sys.path.insert(0, {str(fabric)!r})\n"
        "from sparkfab.proc import children, kill_tree\n"
        "def ended(signum, frame):\n"
        "    for _ in range(3):  # orphans of what was killed come here too\n"
        "        for pid in children(os.getpid()):\n"
        "            kill_tree(pid)\n"
        "        try:\n"
        "            while os.waitpid(-1, os.WNOHANG)[0]:\n"
        "                pass\n"
        "        except ChildProcessError:\n"
        "            break\n"
        "    os._exit(128 + signum)\n"
        "signal.signal(signal.SIGTERM, ended)\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        f"    os.execv({str(real)!r}, [{str(real)!r}, *sys.argv[1:]])\n"
        "code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])\n"
        "os._exit(code if code >= 0 else 128 - code)\n"
    )
    script.chmod(0o755)
    return folder


#: the variable that marks the processes of a run (its value: the run's runner directory)
RUN_MARK = "SPARKFAB_RUN"


def end_leftovers(pdd: Path) -> list[int]:
    """End what an earlier run in `pdd` left running: processes marked with it (ansible-playbook's
    workers, Mitogen's) that outlived a controller killed all at once, which no tether sees (the
    supervisor died with it). The caller holds the cluster's lock, so no run of this cluster is
    under way, and a process with the mark is a leftover; it is said on stderr."""
    mark = f"{RUN_MARK}={pdd}".encode()
    ended: list[int] = []
    mine = {os.getpid(), *proc.descendants(os.getpid())}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if mark in environ and comm != "ssh":  # an ssh master ends itself (ControlPersist) and is reused
            ended += proc.kill_tree(int(entry.name))
    if ended:
        sys.stderr.write(f"ended {len(ended)} process(es) an earlier run in {pdd} left behind: {ended[:8]}\n")
    return ended


#: the longest path of a unix socket (sun_path, with its NUL)
_SUN_PATH = 108
#: what Mitogen adds to TMPDIR for its listener: /mitogen_unix_XXXXXXXX.sock
_MITOGEN_SOCKET = len("/mitogen_unix_") + 8 + len(".sock")


def scratch(work: Path) -> Path | None:
    """The run's own temporary folder, `work`/tmp: ansible-playbook and all it starts get it as
    TMPDIR (Mitogen's unix sockets go there), and it is emptied before each run, so what a run that
    was killed left (a socket no process removed) goes with the next run instead of piling up in
    /tmp. Called once `end_leftovers` has ended whatever could still use it. None where a socket
    in it would be longer than a unix socket's path may be: the run then uses the system's."""
    tmp = work / "tmp"
    if len(str(tmp.resolve())) + _MITOGEN_SOCKET >= _SUN_PATH:
        return None
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700, parents=True)
    return tmp


def end_playbooks() -> None:
    """End this process's ansible-playbook and all it started. runner's own cancel kills only
    its process group, and Ansible's workers each start a session of their own: killed alone,
    ansible-playbook would leave them running their tasks (a module, an ssh) as orphans."""
    for pid in proc.children(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"ansible-playbook") for a in argv[:2]):
            proc.kill_tree(pid)
