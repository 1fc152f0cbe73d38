"""Files the lab writes for its Sparks: ssh keys and configs, and each Spark's own /etc
entries (`ip netns exec` bind-mounts /etc/netns/<ns>/<entry> over /etc/<entry>)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sparkfab import proc
from sparkfab.lab import login
from sparkfab.lab.spec import LabSpec, Node, ns_prefix
from sparkfab.paths import HOST_MOUNTPOINTS, NETNS_ETC, lab_dir
from sparkfab.render import sshconfig
from sparkfab.render.sshconfig import Block, multiplexed
from sparkfab.render.text import fill

ETC_ENTRIES = ("ssh", "netplan", "sparkfab", "sysctl.d", "lldpd.d")
LLDP_CONF = "configure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n"


def ssh_keys(spec: LabSpec) -> None:
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
    return fill("sshd_config.j2", name=n.name, address=n.mgmt_ip)


def ssh_config(spec: LabSpec) -> str:
    d = spec.dir
    blocks = [
        Block((n.name, n.mgmt_ip), (f"HostName {n.mgmt_ip}", f"User {login.login_of(spec, n)}")) for n in spec.sparks
    ]
    every = (*(n.mgmt_ip for n in spec.sparks), *(n.name for n in spec.sparks))
    common = (
        f"IdentityFile {d}/id_ed25519",
        "IdentitiesOnly yes",
        f"UserKnownHostsFile {d}/known_hosts",
        "StrictHostKeyChecking yes",
        *multiplexed(d),
    )
    comment = f"sparkfab lab {spec.cluster}: host-key checking stays on, connections are multiplexed"
    return sshconfig.ssh_config(comment, [*blocks, Block(every, common)])


def etc(spec: LabSpec) -> None:
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


def remove_etc(cluster: str) -> int:
    """Remove the lab's /etc/netns entries; how many there were."""
    dirs = sorted(NETNS_ETC.glob(f"{ns_prefix(cluster)}*")) if NETNS_ETC.exists() else []
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return len(dirs)


def etc_left(cluster: str) -> list[Path]:
    return sorted(NETNS_ETC.glob(f"{ns_prefix(cluster)}*")) if NETNS_ETC.exists() else []


def remove_mountpoints(cluster: str) -> None:
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
