"""Build, inspect and remove the namespace lab (pyroute2 for links, subprocesses for daemons).

Each Spark is a network namespace whose processes (sshd, systemd-networkd, lldpd, and all
SSH sessions) share one mount namespace with a private tmpfs on /run (so /run/systemd,
/run/sshd and lldpd's socket are per Spark) and a read-only /sys (networkd then skips
udev). `ip netns exec` bind-mounts /etc/netns/<ns>/<entry> over /etc/<entry>, which gives
every Spark its own /etc/ssh, /etc/netplan, /etc/sparkfab, /etc/sysctl.d and /etc/lldpd.d.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab import login
from sparkfab.lab.spec import LabSpec, Node, Veth, lab_id, ns_prefix, root_prefix
from sparkfab.paths import HOST_MOUNTPOINTS, NETNS_ETC, lab_dir

log = logging.getLogger("sparkfab.lab")
ETC_ENTRIES = ("ssh", "netplan", "sparkfab", "sysctl.d", "lldpd.d")
NETWORKD = "/lib/systemd/systemd-networkd"
LLDP_CONF = "configure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n"


def _ipr() -> Any:
    from pyroute2 import IPRoute

    return IPRoute()


def _netns(name: str) -> Any:
    from pyroute2 import NetNS

    return NetNS(name, flags=0)  # flags=0: never create a namespace by accident


def existing_namespaces(cluster: str) -> list[str]:
    from pyroute2 import netns

    return sorted(n for n in netns.listnetns() if n.startswith(ns_prefix(cluster)))


# --------------------------------------------------------------------------------- up


def up(spec: LabSpec) -> dict[str, Any]:
    if existing_namespaces(spec.cluster):
        raise LabError(
            f"lab {spec.cluster} is already up (namespaces {ns_prefix(spec.cluster)}*): run `sparkfab lab down` first"
        )
    t0 = time.perf_counter()
    spec.dir.mkdir(parents=True, exist_ok=True)
    (spec.dir / "pids").mkdir(exist_ok=True)
    try:
        _namespaces(spec)
        _mgmt(spec)
        _fabric(spec)
        t_links = time.perf_counter() - t0
        login.create(spec)
        _ssh_keys(spec)
        _etc(spec)
        pids = _daemons(spec)
        _wait_sshd(spec)
    except Exception:
        down(spec.cluster)
        raise
    state = {
        "cluster": spec.cluster,
        "id": spec.id,
        "mgmt_net": spec.mgmt_net,
        "root_ip": spec.root_ip,
        "namespaces": [n.ns for n in spec.nodes],
        "pids": pids,
        "hosts": {n.name: {"ns": n.ns, "mgmt_ip": n.mgmt_ip} for n in spec.sparks},
        "timing": {"links_s": round(t_links, 3), "total_s": round(time.perf_counter() - t0, 3)},
    }
    (spec.dir / "state.json").write_text(json.dumps(state, indent=2))
    return state


def _namespaces(spec: LabSpec) -> None:
    from pyroute2 import netns

    for n in spec.nodes:
        netns.create(n.ns)
        with _netns(n.ns) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


def _mgmt(spec: LabSpec) -> None:
    root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        with _ipr() as ipr:
            ipr.link("add", ifname=spec.bridge, kind="bridge")
            br = ipr.link_lookup(ifname=spec.bridge)[0]
            ipr.addr("add", index=br, address=spec.root_ip, prefixlen=24)
            ipr.link("set", index=br, state="up")
            for n in spec.sparks:
                with _netns(n.ns) as ns:
                    ns.link("add", ifname=n.mgmt_if, kind="veth", peer={"ifname": n.root_peer, "net_ns_fd": root_fd})
                    idx = ns.link_lookup(ifname=n.mgmt_if)[0]
                    ns.addr("add", index=idx, address=n.mgmt_ip, prefixlen=24)
                    ns.link("set", index=idx, state="up")
                peer = ipr.link_lookup(ifname=n.root_peer)[0]
                ipr.link("set", index=peer, master=br, state="up")
    finally:
        os.close(root_fd)


def _fabric(spec: LabSpec) -> None:
    for ns_name, bridge, mtu in spec.switch_bridges:
        with _netns(ns_name) as ns:
            ns.link("add", ifname=bridge, kind="bridge", mtu=mtu)
            ns.link("set", index=ns.link_lookup(ifname=bridge)[0], state="up")
    for v in spec.veths:
        make_veth(v)


def make_veth(v: Veth) -> None:
    """Create a rail inside the Spark's namespace with its final names (networkd v252 does not
    pick up a link renamed after creation), MTU on both ends, both ends up."""
    with _netns(v.a_ns) as a:
        peer = {"ifname": v.b_if, "net_ns_fd": v.b_ns, "mtu": v.mtu}
        a.link("add", ifname=v.a_if, kind="veth", mtu=v.mtu, peer=peer)
        a.link("set", index=a.link_lookup(ifname=v.a_if)[0], state="up")
    with _netns(v.b_ns) as b:
        idx = b.link_lookup(ifname=v.b_if)[0]
        if v.bridge:
            b.link("set", index=idx, master=b.link_lookup(ifname=v.bridge)[0])
        b.link("set", index=idx, state="up")


def _ssh_keys(spec: LabSpec) -> None:
    key = spec.dir / "id_ed25519"
    if not key.exists():
        proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"sparkfab-lab-{spec.cluster}", "-f", str(key)])
    known = []
    for n in spec.sparks:
        d = NETNS_ETC / n.ns / "ssh"
        d.mkdir(parents=True, exist_ok=True)
        hk = d / "ssh_host_ed25519_key"
        if not hk.exists():
            proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", n.name, "-f", str(hk)])
        known.append(f"{n.mgmt_ip} {' '.join(hk.with_suffix('.pub').read_text().split()[:2])}")
        login.authorize(spec, d, key.with_suffix(".pub"))
        (d / "sshd_config").write_text(_sshd_config(n))
    (spec.dir / "known_hosts").write_text("\n".join(known) + "\n")
    (spec.dir / "ssh_config").write_text(ssh_config(spec))


def _sshd_config(n: Node) -> str:
    return "\n".join(
        [
            f"# sparkfab lab: sshd of {n.name}",
            f"ListenAddress {n.mgmt_ip}",
            "Port 22",
            "HostKey /etc/ssh/ssh_host_ed25519_key",
            "PidFile /run/sshd.pid",
            "AuthorizedKeysFile /etc/ssh/authorized_keys.d/%u",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "MaxStartups 200:30:400",
            "MaxSessions 200",
            "AcceptEnv LANG LC_*",
            "Subsystem sftp /usr/lib/openssh/sftp-server",
            "",
        ]
    )


def ssh_config(spec: LabSpec) -> str:
    d = spec.dir
    lines = [f"# sparkfab lab {spec.cluster}: host-key checking stays on, connections are multiplexed"]
    for n in spec.sparks:
        lines += [f"Host {n.name} {n.mgmt_ip}", f"  HostName {n.mgmt_ip}", f"  User {login.login_of(spec, n)}"]
    lines += [
        f"Host {' '.join(n.mgmt_ip for n in spec.sparks)} {' '.join(n.name for n in spec.sparks)}",
        f"  IdentityFile {d}/id_ed25519",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {d}/known_hosts",
        "  StrictHostKeyChecking yes",
        "  ControlMaster auto",
        f"  ControlPath {d}/cm-%C",
        "  ControlPersist 120s",
        "  ConnectTimeout 10",
        "",
    ]
    return "\n".join(lines)


def _etc(spec: LabSpec) -> None:
    """Per-Spark /etc entries; an entry missing on this machine gets an empty mount point."""
    for point in HOST_MOUNTPOINTS:
        if not point.exists():
            point.mkdir(mode=0o755)
            with (spec.dir.parent / "created-mountpoints").open("a") as f:
                f.write(f"{point}\n")
    for n in spec.nodes:
        base = NETNS_ETC / n.ns
        for entry in ETC_ENTRIES:
            (base / entry).mkdir(parents=True, exist_ok=True)
        os.chmod(base / "netplan", 0o700)
        (base / "lldpd.d" / "sparkfab-lab.conf").write_text(LLDP_CONF)
        if n.kind == "spark":  # its own name resolves, as on a Spark (sudo looks it up)
            (base / "hosts").write_text(f"127.0.0.1 localhost\n::1 localhost ip6-localhost\n{n.mgmt_ip} {n.name}\n")


def _daemons(spec: LabSpec) -> dict[str, int]:
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


def _wait_sshd(spec: LabSpec, timeout: float = 15.0) -> None:
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


# ------------------------------------------------------------------------------- down


def _ours(pid: int) -> bool:
    """Only end a process that still lives in one of this lab's namespaces, or one we spawned."""
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        if _ours(pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _kill(pids: set[int]) -> None:
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(_ours(p) for p in pids):
        time.sleep(0.05)
    _signal(pids, signal.SIGKILL)


def _lab_pids(cluster: str, namespaces: list[str]) -> set[int]:
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


def _ssh_masters(directory: Path) -> set[int]:
    """SSH connection masters our tools started for this lab (their command line names its
    directory): ended by pid, so that a rebuilt lab never talks through a dead connection."""
    found = set()
    marker = str(directory) + "/"
    for entry in Path("/proc").iterdir():
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


def down(cluster: str) -> dict[str, int]:
    """Remove everything the lab created, by name and pid; works without a state file."""
    from pyroute2 import netns

    namespaces = existing_namespaces(cluster)
    pids = _lab_pids(cluster, namespaces)
    _kill(pids)
    for ns in namespaces:
        try:
            netns.remove(ns)
        except FileNotFoundError:  # gone meanwhile (another `lab down` of the same lab)
            pass
    links = _remove_root_links(cluster)
    dirs = 0
    for d in NETNS_ETC.glob(f"{ns_prefix(cluster)}*") if NETNS_ETC.exists() else []:
        shutil.rmtree(d, ignore_errors=True)
        dirs += 1
    _remove_mountpoints(cluster)
    login.remove(cluster)
    if lab_dir(cluster).exists():
        shutil.rmtree(lab_dir(cluster), ignore_errors=True)
    _wait_gone(cluster)
    return {"namespaces": len(namespaces), "processes": len(pids), "links": links, "etc_dirs": dirs}


def _remove_mountpoints(cluster: str) -> None:
    """Remove the empty mount points this lab created, unless another lab still uses them."""
    from pyroute2 import netns

    marker = lab_dir(cluster).parent / "created-mountpoints"
    if not marker.exists() or any(n.startswith("sf-") for n in netns.listnetns()):
        return
    for line in marker.read_text().split():
        point = Path(line)
        if point in HOST_MOUNTPOINTS and point.is_dir() and not any(point.iterdir()):
            point.rmdir()
    marker.unlink()


def _remove_root_links(cluster: str) -> int:
    prefix = root_prefix(cluster)
    n = 0
    with _ipr() as ipr:
        for link in ipr.get_links():
            name = link.get_attr("IFLA_IFNAME")
            if name and name.startswith(prefix):
                try:
                    ipr.link("del", index=link["index"])
                    n += 1
                except Exception:
                    pass
    return n


def _wait_gone(cluster: str, timeout: float = 5.0) -> None:
    """Namespace deletion is asynchronous: wait until no root-side peer of ours remains."""
    prefix = root_prefix(cluster)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _ipr() as ipr:
            left = [
                link.get_attr("IFLA_IFNAME")
                for link in ipr.get_links()
                if (link.get_attr("IFLA_IFNAME") or "").startswith(prefix)
            ]
        if not left:
            return
        time.sleep(0.05)
    raise LabError(f"links of lab {cluster} did not go away: {', '.join(left)}")


def leftovers(cluster: str) -> list[str]:
    """Everything of this lab still present (empty after a clean `lab down`)."""
    found = [f"namespace {n}" for n in existing_namespaces(cluster)]
    with _ipr() as ipr:
        found += [
            f"link {link.get_attr('IFLA_IFNAME')}"
            for link in ipr.get_links()
            if (link.get_attr("IFLA_IFNAME") or "").startswith(root_prefix(cluster))
        ]
    found += [f"dir {d}" for d in NETNS_ETC.glob(f"{ns_prefix(cluster)}*")] if NETNS_ETC.exists() else []
    if lab_dir(cluster).exists():
        found.append(f"dir {lab_dir(cluster)}")
    return found + login.leftovers(cluster)


def status(cluster: str) -> dict[str, Any]:
    state_file = lab_dir(cluster) / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    alive = {name: _ours(pid) for name, pid in state.get("pids", {}).items()}
    return {
        "cluster": cluster,
        "id": lab_id(cluster),
        "up": bool(existing_namespaces(cluster)),
        "namespaces": existing_namespaces(cluster),
        "processes": alive,
        "hosts": state.get("hosts", {}),
        "engine": state.get("engine"),
        "inventory": str(lab_dir(cluster) / "inventory.yml"),
        "python": sys.executable,
    }
