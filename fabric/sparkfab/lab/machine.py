"""A lab Spark as a machine: systemd-nspawn boots the lab image (`lab.image`) with its own
overlay (its disk: what it writes survives a reboot), inside the Spark's network namespace
(the cable veths the lab made), with its own init, sshd, systemd-networkd, lldpd, nftables and
Docker as units.

A small supervisor per Spark (a shell loop) mounts the overlay in a mount namespace of its own
and runs nspawn. When the machine reboots (nspawn exits with 133), the supervisor makes the
Spark's network namespace anew before booting it again, so that what the kernel held is gone as
after a real reboot: addresses, routes, nftables, sysctls, MTUs; the cables come back, and the
neighbours see them go down and up.

The host's files a lab Spark needs are bound in read-only at the same paths: sparkfab's own
Python environment (the collective and `verify --collective` run in it), vLLM's and the Python
they were made from, and the lab's model.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sparkfab import proc, spark
from sparkfab.errors import LabError
from sparkfab.lab import image
from sparkfab.lab.cgroups import CGROUP_CONTROLLERS, cgroup_parent, init_cgroups
from sparkfab.lab.spec import LabSpec, Node

REBOOT = 133  # systemd-nspawn's exit code when the machine asked for a reboot
#: device nodes Docker finds for `--device /dev/infiniband` (a Spark's RDMA devices; here null devices)
IB_NODES = ("uverbs0", "uverbs1", "uverbs2", "uverbs3", "rdma_cm")


@dataclass(frozen=True)
class Machine:
    node: Node
    dir: Path  # <lab>/machines/<host>

    @property
    def upper(self) -> Path:
        return self.dir / "upper"

    @property
    def pidfile(self) -> Path:
        return self.dir / "supervisor.pid"

    @property
    def log(self) -> Path:
        return self.dir / "console.log"


def machines(spec: LabSpec) -> list[Machine]:
    return [Machine(n, spec.paths.machines / n.name) for n in spec.machines]


# ------------------------------------------------------------------------------ its disk


def _put(m: Machine, lower: Path, path: str, content: str | bytes, mode: int, owner: int = 0) -> None:
    """A file in the machine's own layer, its directories made as the image has them (overlay
    takes a directory's owner and mode from the upper layer where both have it)."""
    rel = Path(path.lstrip("/"))
    parts = rel.parts[:-1]
    for i in range(1, len(parts) + 1):
        d = m.upper.joinpath(*parts[:i])
        if d.exists():
            continue
        d.mkdir()
        src = lower.joinpath(*parts[:i])
        st = src.stat() if src.exists() else None
        os.chown(d, st.st_uid if st else owner, st.st_gid if st else owner)
        os.chmod(d, (st.st_mode & 0o7777) if st else 0o700)
    target = m.upper / rel
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    os.chown(target, owner, owner)
    os.chmod(target, mode)


def prepare(spec: LabSpec, m: Machine, lower: Path, keys: Path, line_gbps: int) -> None:
    """The machine's own files: its name, host key, who may log in (the lab's key, for root and
    the non-root login), its Docker's settings, and the mode of its cables for the hardware's
    facts. No key to reach another Spark: a Spark as shipped has none (`sparkfab peer-ssh`)."""
    for d in (m.upper, m.dir / "work", m.dir / "merged", m.dir / "docker", image.compile_cache()):
        d.mkdir(parents=True, exist_ok=True)
    n = m.node
    name = n.hostname or n.name  # a Spark as shipped names itself, not by its inventory key
    _put(m, lower, "/etc/hostname", f"{name}\n", 0o644)
    _put(m, lower, "/etc/hosts", f"127.0.0.1 localhost\n::1 localhost ip6-localhost\n{n.mgmt_ip} {name}\n", 0o644)
    host_key = keys / f"{n.name}.host"
    _put(m, lower, "/etc/ssh/ssh_host_ed25519_key", host_key.read_bytes(), 0o600)
    _put(m, lower, "/etc/ssh/ssh_host_ed25519_key.pub", host_key.with_suffix(".host.pub").read_bytes(), 0o644)
    lab_key = keys / "id_ed25519"
    for home, uid in (("/root", 0), (f"/home/{image.LOGIN}", image.LOGIN_UID)):
        _put(m, lower, f"{home}/.ssh/authorized_keys", lab_key.with_suffix(".pub").read_bytes(), 0o600, uid)
    daemon = {
        "cgroup-parent": cgroup_parent(spec, n),
        "runtimes": {"sparkfab-lab": {"path": "/usr/local/sbin/sparkfab-lab-runc"}},
        "default-runtime": "sparkfab-lab",
    }
    _put(m, lower, "/etc/docker/daemon.json", json.dumps(daemon, indent=1) + "\n", 0o644)
    hw = {"line_gbps": line_gbps, "devices": {spark.rdma_device(p, r): d for d, (p, r) in spark.NETDEVS.items()}}
    _put(m, lower, "/etc/sparkfab-lab/hw.json", json.dumps(hw, indent=1) + "\n", 0o644)
    _put(m, lower, "/etc/default/lldpd", f'DAEMON_ARGS="-I {",".join(spark.NETDEVS)}"\n', 0o644)
    if image.SHIPPED[spec.shipped].network_manager:
        # as a site configures a Spark's management port under NetworkManager: a profile of its own
        profile = (
            f"[connection]\nid=management\ntype=ethernet\ninterface-name={n.mgmt_if}\nautoconnect=true\n\n"
            f"[ipv4]\nmethod=manual\naddress1={n.mgmt_ip}/24\n\n[ipv6]\nmethod=ignore\n"
        )
        _put(m, lower, "/etc/NetworkManager/system-connections/management.nmconnection", profile, 0o600)


def host_paths() -> list[Path]:
    """What every lab Spark sees of this machine, read-only at the same path: sparkfab's
    Python environment, those of the engines the lab serves (vLLM's), and the Python
    installations they were made from."""
    from sparkfab import engines
    from sparkfab.oracle import engine_python

    out = [Path(sys.prefix), Path(sys.base_prefix)]
    served = (engine_python(e) for e in engines.in_lab() if e.lab and e.lab.module)
    for venv in (py.parent.parent for py in served if py is not None):
        if not (venv / "pyvenv.cfg").exists():
            continue
        out.append(venv)
        home = next(
            (
                ln.split("=", 1)[1].strip()
                for ln in (venv / "pyvenv.cfg").read_text().splitlines()
                if ln.startswith("home")
            ),
            "",
        )
        if home:
            out.append(Path(home).parent)
    return sorted({p.resolve() for p in out if p.exists() and p != Path("/usr")})


# ------------------------------------------------------------------------------ running it


def nspawn_argv(spec: LabSpec, m: Machine, extra_ro: list[tuple[Path, str]]) -> list[str]:
    binds = [f"--bind=/sys/fs/cgroup/{c}:/run/sparkfab-lab/cgroup/{c}" for c in CGROUP_CONTROLLERS]
    binds += [f"--bind={m.dir / 'docker'}:/var/lib/docker"]
    binds += [f"--bind=/dev/null:/dev/infiniband/{dev}" for dev in IB_NODES]
    binds += [f"--bind-ro={p}" for p in host_paths()]
    binds += [f"--bind-ro={src}:{dst}" for src, dst in extra_ro]
    binds += [f"--bind={image.compile_cache()}:{image.COMPILE_CACHE}"]
    return [
        "systemd-nspawn",
        f"--directory={m.dir / 'merged'}",
        "--boot",
        f"--machine={m.node.ns}",
        f"--network-namespace-path=/run/netns/{m.node.ns}",
        "--register=no",
        "--keep-unit",
        "--console=read-only",
        "--capability=all",  # a Spark's root has them; Docker, nftables and netplan use them
        "--system-call-filter=add_key keyctl bpf",  # runc's keyrings and Docker's device filters
        *binds,
    ]


def supervisor(spec: LabSpec, m: Machine, lower: Path, extra_ro: list[tuple[Path, str]]) -> str:
    """The loop that boots the machine, and on a reboot makes its network namespace anew first."""
    overlay = f"lowerdir={lower},upperdir={m.upper},workdir={m.dir / 'work'}"
    boot = (
        f"mount -t overlay sf-{spec.id}-{m.node.name} -o {shlex.quote(overlay)} {shlex.quote(str(m.dir / 'merged'))} "
        f"&& exec {shlex.join(nspawn_argv(spec, m, extra_ro))}"
    )
    renew = shlex.join([sys.executable, "-m", "sparkfab.lab.wire", "renew", str(spec.dir), m.node.name])
    # the loop moves itself into the machine's own cgroups first: nspawn and the machine follow
    enter = "".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))} && " for d in init_cgroups(spec, m.node))
    return (
        f"{enter}while :; do "
        # /proc/sys/net writable (Docker and sysctl set forwarding); no image lock files left behind
        f"SYSTEMD_NSPAWN_API_VFS_WRITABLE=network SYSTEMD_NSPAWN_LOCK=0 "
        f"unshare --mount --propagation private sh -c {shlex.quote(boot)}; "
        f'rc=$?; [ "$rc" = {REBOOT} ] || exit "$rc"; echo "sparkfab lab: reboot of {m.node.name}"; '
        f"{renew} || exit 1; done"
    )


#: the supervisors this process started, by machine directory: how one ended (an exit status or
#: a signal) is known only to its parent, and says why a machine stopped without a word
_started: dict[Path, subprocess.Popen[bytes]] = {}


def start(spec: LabSpec, m: Machine, lower: Path, extra_ro: list[tuple[Path, str]]) -> int:
    for d in init_cgroups(spec, m.node):
        d.mkdir(parents=True, exist_ok=True)
    p = proc.spawn(["sh", "-c", supervisor(spec, m, lower, extra_ro)], str(m.log))
    _started[m.dir] = p
    m.pidfile.write_text(f"{p.pid}\n")
    return p.pid


def how_it_ended(m: Machine) -> str:
    """How the machine's supervisor ended, where this process started it ("" otherwise)."""
    p = _started.get(m.dir)
    rc = None if p is None else p.poll()
    if rc is None:
        return ""
    return f" (its supervisor was killed by signal {-rc})" if rc < 0 else f" (its supervisor exited with {rc})"


def init_pid(m: Machine) -> int | None:
    """The machine's PID 1 as this machine sees it (the child of nspawn), while it runs."""
    sup = supervisor_pid(m)
    if sup is None:
        return None
    for pid in proc.descendants(sup, depth=3):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd" and _parent_comm(pid) == "systemd-nspawn":
                return pid
        except OSError:
            continue
    return None


def _parent_comm(pid: int) -> str:
    ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return Path(f"/proc/{ppid}/comm").read_text().strip()


def run(m: Machine, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`command` inside the running machine (every namespace of its PID 1), as root."""
    pid = init_pid(m)
    if pid is None:
        raise LabError(f"{m.node.name} is not running")
    return proc.run(["nsenter", "-t", str(pid), "-a", *command], check=False, timeout=timeout)


def supervisor_pid(m: Machine) -> int | None:
    """The pid of the machine's supervisor while it runs: the pid in its pid file, only if that
    process is still the supervisor of this machine (its command line names the machine's
    directory). A supervisor that ended leaves its pid to be reused by any process, another
    lab's machine among them, which must never be signalled or searched as this one."""
    try:
        sup = int(m.pidfile.read_text())
        argv = Path(f"/proc/{sup}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return sup if proc.alive(sup) and f"{m.dir}/merged".encode() in argv else None


def reboot(m: Machine) -> None:
    run(m, "systemctl", "reboot")


#: where systemd-nspawn keeps a directory per running machine (left behind when it is killed)
PROPAGATE = Path("/run/systemd/nspawn/propagate")


def stop(ms: list[Machine], timeout: float = 0) -> None:
    """End every machine: its supervisor first (so that it does not boot it again), then nspawn,
    which turns SIGTERM into a clean shutdown (`timeout` seconds for it; 0: at once, SIGKILL,
    which takes every process of the machine with it); then nspawn's directory of it."""
    import signal

    sups = {}
    for m in ms:
        sup = supervisor_pid(m)
        if sup is not None:
            sups[m] = sup
    nspawns = {m: [p for p in proc.descendants(pid, 2) if _comm(p) == "systemd-nspawn"] for m, pid in sups.items()}
    for m, pid in sups.items():
        proc.send(pid, signal.SIGTERM)  # the loop first, so that it does not boot the machine again
        for p in nspawns[m]:
            proc.send(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    alive = [p for ps in nspawns.values() for p in ps]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _comm(p) == "systemd-nspawn"]
    for p in [*alive, *sups.values()]:
        proc.send(p, signal.SIGKILL)
    for m in ms:
        if m.node.ns:
            shutil.rmtree(PROPAGATE / m.node.ns, ignore_errors=True)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
