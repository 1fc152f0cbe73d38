"""The lab's processes, and ending them: only ever by pid, and only a process that is ours.

Each Spark's processes (sshd, systemd-networkd, lldpd, and all SSH sessions) run in its
network namespace and share one private mount namespace with a tmpfs on /run (so
/run/systemd, /run/sshd and lldpd's socket are per Spark) and a read-only /sys (networkd then
skips udev).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab.links import existing_namespaces
from sparkfab.lab.spec import LabSpec
from sparkfab.paths import lab_dir

NETWORKD = "/lib/systemd/systemd-networkd"


def start(spec: LabSpec) -> dict[str, int]:
    pids: dict[str, int] = {}
    logs = spec.dir / "logs"
    logs.mkdir(exist_ok=True)
    pdir = spec.dir / "pids"
    for n in spec.nodes:
        lldp = f"lldpd -d -I '{n.lldp_ifs}' >>{logs}/{n.name}.lldpd.log 2>&1 & echo $! >{pdir}/{n.name}.lldpd"
        prep = (
            f"mount -t tmpfs -o mode=755 sf-run /run && mkdir -p /run/sshd /run/lldpd /run/systemd "
            f"&& mount -o remount,bind,ro /sys && hostname {n.name} && "
        )
        if n.kind == "spark":
            script = (
                prep
                + f"({NETWORKD} >>{logs}/{n.name}.networkd.log 2>&1 & echo $! >/run/systemd/sparkfab-networkd.pid; "
                f"cp /run/systemd/sparkfab-networkd.pid {pdir}/{n.name}.networkd) && ({lldp}) && "
                f"exec /usr/sbin/sshd -D -e -f /etc/ssh/sshd_config"
            )
        else:
            script = prep + f"exec lldpd -d -I '{n.lldp_ifs}'"
        argv = [
            "ip",
            "netns",
            "exec",
            n.ns,
            "unshare",
            "--uts",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
        ]
        p = proc.spawn(argv, str(logs / f"{n.name}.log"))
        pids[f"{n.name}.{'sshd' if n.kind == 'spark' else 'lldpd'}"] = p.pid
    return pids


def wait_sshd(spec: LabSpec, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    pending = {n.mgmt_ip for n in spec.sparks}
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
    """A live process of this lab: it runs in one of the lab's network namespaces, or it is an
    ssh connection master whose command line names the lab's directory. A pid from a pid file
    that now belongs to some other process is not ours."""
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
    pdir = lab_dir(cluster) / "pids"
    state = lab_dir(cluster) / "state.json"
    if state.exists():
        pids |= {int(p) for p in json.loads(state.read_text()).get("pids", {}).values()}
    for f in pdir.glob("*") if pdir.exists() else []:
        if f.read_text().strip().isdigit():
            pids.add(int(f.read_text().strip()))
    pids |= _ssh_masters(lab_dir(cluster))
    pids.discard(os.getpid())
    return pids


def _ssh_masters(directory: Path, entries: list[Path] | None = None) -> set[int]:
    """SSH connection masters our tools started for this lab (their command line names its
    directory): ended by pid, so that a rebuilt lab never talks through a dead connection."""
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
        if comm == "ssh" and marker in cmd:
            found.add(int(entry.name))
    return found
