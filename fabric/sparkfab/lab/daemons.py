"""The lab's own processes, and ending them: only ever by pid, and only a process that is ours.

A lab Spark is a machine (`lab.machine`); what runs here besides is each switch's frame sender,
in the switch's network namespace. Every process of a Spark runs in
its network namespace, so ending a lab's processes is ending what runs in its namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab import cgroups
from sparkfab.lab.links import existing_namespaces
from sparkfab.lab.spec import LabSpec
from sparkfab.paths import lab_dir, lab_state

#: sparkfab's LLDP frame sender and listener (run here for the lab's switches, on a Spark by discover)
PROBE = Path(__file__).resolve().parents[1] / "assets" / "lldp_probe.py"


def start_switches(spec: LabSpec) -> dict[str, int]:
    """Each switch as its OS is on the wire: the LLDPDUs its OS sends (`spec`'s, from
    `switches.profiles.Profile.frame`) on each of its ports, at its OS's interval, sent by sparkfab's own
    frame sender (`assets/lldp_probe.py`, which only relays octets) in the switch's namespace."""
    pids: dict[str, int] = {}
    logs = spec.paths.logs
    logs.mkdir(exist_ok=True)
    for n in spec.nodes:
        if n.kind != "switch" or not n.frames:
            continue
        send = dict(f.split(" ", 1) for f in n.frames)
        config = json.dumps({"send": send, "every": n.interval_s or 30, "seconds": 0})
        argv = ["ip", "netns", "exec", n.ns, sys.executable, "-I", str(PROBE), config]
        p = proc.spawn(argv, str(logs / f"{n.name}.log"))
        pids[f"{n.name}.lldp"] = p.pid
    return pids


def wait_sshd(spec: LabSpec, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    pending = {n.mgmt_ip for n in spec.machines}
    while pending and time.monotonic() < deadline:
        for ip in sorted(pending):
            try:
                with socket.create_connection((ip, 22), timeout=0.5) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        pending.discard(ip)
            except OSError:
                pass
        if pending:
            time.sleep(0.05)
    if pending:
        raise LabError(f"sshd did not answer on {', '.join(sorted(pending))} (logs in {spec.dir}/logs)")


def _namespace_inodes(cluster: str) -> set[int]:
    out = set()
    for ns in existing_namespaces(cluster):
        try:
            out.add(os.stat(f"/run/netns/{ns}").st_ino)
        except OSError:
            pass
    return out


def ours(pid: int, cluster: str, namespaces: set[int] | None = None) -> bool:
    """A live process of this lab: it runs in one of the lab's network namespaces, or its command
    line names the lab's directory (a machine's supervisor and nspawn, an ssh connection master).
    A pid from a pid file that now belongs to some other process is not ours."""
    try:
        inode = os.stat(f"/proc/{pid}/ns/net").st_ino
        inodes = _namespace_inodes(cluster) if namespaces is None else namespaces
        return inode in inodes or pid in _ssh_masters(lab_dir(cluster), [Path(f"/proc/{pid}")])
    except OSError:
        return False


def _signal(pids: set[int], sig: int, cluster: str, inodes: set[int]) -> None:
    for pid in pids:
        if ours(pid, cluster, inodes):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def kill(pids: set[int], cluster: str) -> None:
    """SIGTERM, three seconds, then SIGKILL: each time only to a process that is still ours."""
    inodes = _namespace_inodes(cluster)
    _signal(pids, signal.SIGTERM, cluster, inodes)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(ours(p, cluster, inodes) for p in pids):
        time.sleep(0.05)
    _signal(pids, signal.SIGKILL, cluster, inodes)


def lab_pids(cluster: str, namespaces: list[str]) -> set[int]:
    pids: set[int] = set()
    for ns in namespaces:
        res = proc.run(["ip", "netns", "pids", ns], check=False)
        pids |= {int(p) for p in res.stdout.split() if p.isdigit()}
    state = lab_state(cluster)
    if state.exists():
        try:
            pids |= {int(p) for p in json.loads(state.read_text()).get("pids", {}).values()}
        except (OSError, ValueError, AttributeError):
            pass
    pids |= _ssh_masters(lab_dir(cluster))
    pids |= cgroups.cgroup_pids(cluster)
    pids.discard(os.getpid())
    return pids


#: what the lab starts here whose command line names its directory
OWN = ("ssh", "sh", "systemd-nspawn", "unshare")


def _ssh_masters(directory: Path, entries: list[Path] | None = None) -> set[int]:
    """Processes our tools started for this lab whose command line names its directory (ssh
    connection masters, a machine's supervisor and nspawn): ended by pid, so that a rebuilt lab
    never talks through a dead connection."""
    found = set()
    marker = str(directory) + "/"
    for entry in Path("/proc").iterdir() if entries is None else entries:
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm in OWN and marker in cmd:
            found.add(int(entry.name))
    return found
