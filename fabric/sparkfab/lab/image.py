"""The lab's two images, built once and cached by what they are made of.

- The machine root: a Debian bookworm root filesystem (mmdebstrap) that boots as a lab Spark
  under systemd-nspawn: systemd, sshd, systemd-networkd, netplan, lldpd, Docker, OpenMPI, sudo
  and a non-root login (`spark`), as a Spark's own OS has them; without nftables, as a Spark
  is shipped, which the image's package mirror carries for `apply` to install (`lab.mirror`).
  Every lab Spark boots from it read-only, with an overlay of its own (`lab.machine`).
- The container image: what the lab's Docker imports as the recipe's image, a root with only
  the machine's /etc basics and mount points; the lab's copy of the recipe binds the machine's
  own /usr into it (its libraries and the g++ torch's inductor compiles with), vLLM's CPU build
  and the Python it was made from. No registry is reachable, and importing a root with vLLM
  into every Spark's Docker would cost a minute per `lab up`; this one takes a fraction of a
  second.

What the lab cannot give a Spark on this machine is made up inside the image, each piece named
in `docs/explanation/architecture.md`: the hardware's facts per mode (`sparkfab-lab-hw`, a small daemon
that keeps a sysfs-shaped RDMA tree and the netdevs' speeds), writable cgroups for Docker
(`sparkfab-lab-cgroup`), a runc that clamps rlimits this machine cannot raise, a GPU hook
that lets `docker run --gpus all` start without a GPU, and a `udevadm` that does not wait for
the udevd a container does not run.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab import mirror

SUITE = "bookworm"
#: what a lab Spark's OS has (a DGX OS Spark has the same programs, from Ubuntu); g++ and openssl
#: for the lab's container image, whose userland is the machine's /usr (torch's inductor builds
#: its CPU kernels with g++ and hashes them with openssl)
MACHINE_PACKAGES = [
    "systemd",
    "systemd-sysv",
    "dbus",
    "udev",
    "iproute2",
    "openssh-server",
    "sudo",
    "python3",
    "python3-apt",  # Ansible's apt module (a DGX OS has it)
    "netplan.io",
    "lldpd",
    "nftables",  # for the lab's mirror: left out of the installed system (`lab.mirror`)
    "iptables",
    "iputils-ping",
    "ethtool",
    "procps",
    "kmod",
    "docker.io",
    "openmpi-bin",
    "libnuma1",
    "g++",
    "openssl",
]
#: units a lab Spark does not need at boot (timers, consoles, waits for a network)
MASKED = [
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "man-db.timer",
    "e2scrub_all.timer",
    "fstrim.timer",
    "systemd-networkd-wait-online.service",
    "getty@tty1.service",
    "console-getty.service",
    "systemd-timesyncd.service",
]
#: the non-root login of a lab Spark (a Spark's owner logs in, then sudo)
LOGIN = "spark"
LOGIN_UID = 1000
#: its password, which sudo asks for as on a Spark (the lab's inventory hands it to Ansible as
#: the become password, and sparkfab's checks type it on sudo's stdin); a lab-only secret
LOGIN_PASSWORD = "spark-lab-owner"
#: how the owner becomes root: with the login's password, as the owner of a Spark does
SUDOERS = f"# a lab Spark's owner becomes root with the login's password, as on a Spark\n{LOGIN} ALL=(ALL:ALL) ALL\n"


def base() -> Path:
    return Path(os.environ.get("SPARKFAB_LAB_IMAGES", "/var/lib/sparkfab/lab-images"))


#: where a lab Spark and its containers find the lab's compile cache (writable, shared by every
#: Spark of every lab): the engine's ranks compile the same kernels (torch's inductor) at their
#: first requests, each in its own container's /tmp otherwise, anew at every start
COMPILE_CACHE = "/var/lib/sparkfab/lab-compile-cache"


def compile_cache() -> Path:
    """This machine's side of `COMPILE_CACHE`, beside the images (kept across labs, as they are)."""
    return base() / "compile-cache"


def _files() -> Path:
    return Path(str(resources.files("sparkfab.lab"))) / "files"


def _digest(kind: str, packages: list[str]) -> str:
    """What an image is made of: its suite, packages and the lab's own files."""
    shipped = f"{' '.join(mirror.SHIPPED_WITHOUT)}|{mirror.SOURCES}"
    h = hashlib.sha256(f"{kind}|{SUITE}|{' '.join(packages)}|{' '.join(MASKED)}|{LOGIN}|{SUDOERS}|{shipped}".encode())
    for f in sorted(_files().iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One build at a time per image (two labs coming up at once share it)."""
    base().mkdir(parents=True, exist_ok=True)
    with open(base() / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class Shipped:
    """How a lab Spark arrives: packages left out of it (for the lab's mirror, apply installs
    them), packages added, and which network service renders netplan."""

    without: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    network_manager: bool = False


#: the variants: lldpd as its Debian package configures it (the default); without it (whether DGX
#: OS ships lldpd is not known: discover must work either way); and NetworkManager rendering
#: netplan, as Ubuntu 24.04 desktop and DGX OS do (systemd-networkd installed but not enabled,
#: /etc/netplan/01-network-manager-all.yaml, the management address an NM profile of its own)
SHIPPED = {
    "lldpd": Shipped(),
    "bare": Shipped(without=("lldpd",)),
    "nm": Shipped(extra=("network-manager",), network_manager=True),
}

#: /etc/netplan/01-network-manager-all.yaml as an Ubuntu desktop install carries it (quoted
#: verbatim in public Ubuntu 18.04-24.04 notes; no DGX OS copy at hand): every device to
#: NetworkManager, nothing else
NM_NETPLAN = (
    "# Let NetworkManager manage all devices on this system\nnetwork:\n  version: 2\n  renderer: NetworkManager\n"
)


def _name(variant: str) -> str:
    digest = _digest("machine", [*MACHINE_PACKAGES, repr(sorted(SHIPPED.items()))])
    return f"spark-{digest}" if variant == "lldpd" else f"spark-{digest}-{variant}"


def machine_root(variant: str = "lldpd") -> Path:
    """The machine root of a variant of `SHIPPED`, built on first use (about a minute, 650 MB)
    and cached by digest."""
    if variant not in SHIPPED:
        raise LabError(f"no lab image {variant!r}: one of {', '.join(SHIPPED)}")
    name = _name(variant)
    root = base() / name
    if (root / ".complete").exists():
        return root
    with _locked(name):
        if not (root / ".complete").exists():
            how = SHIPPED[variant]
            _build(root, [*MACHINE_PACKAGES, *how.extra], lambda r: _customize_machine(r, how))
    return root


#: what the container image takes from the machine root: its users, the dynamic loader's
#: cache and the alternatives' links (the rest of the userland is the machine's /usr, bound in)
CONTAINER_ETC = ("passwd", "group", "ld.so.cache", "ld.so.conf", "nsswitch.conf", "alternatives", "hosts")


def container_tar(tag: str) -> Path:
    """The container image as `docker save` writes one (a layer, its config, a manifest naming
    `tag`), made from the machine root and cached: `docker load` gives it the same ID on every
    Spark, as copying one image to every Spark does on a site."""
    root = machine_root()
    digest = hashlib.sha256(f"{root.name}|{tag}".encode()).hexdigest()[:12]
    tar = base() / f"container-{root.name.split('-', 1)[1]}-{digest}.tar"
    if tar.exists():
        return tar
    with _locked(tar.stem):
        if not tar.exists():
            layer = _skeleton(root)
            diff = hashlib.sha256(layer).hexdigest()
            config = json.dumps(
                {
                    "architecture": "amd64",
                    "os": "linux",
                    "created": "2026-01-01T00:00:00Z",
                    "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
                    "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff}"]},
                    "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "sparkfab lab image"}],
                },
                sort_keys=True,
            ).encode()
            name = hashlib.sha256(config).hexdigest()
            manifest = json.dumps([{"Config": f"{name}.json", "RepoTags": [tag], "Layers": [f"{diff}/layer.tar"]}])
            tmp = tar.with_suffix(".tmp")
            with tarfile.open(tmp, "w") as out:
                for path, data in (
                    (f"{diff}/layer.tar", layer),
                    (f"{name}.json", config),
                    ("manifest.json", manifest.encode()),
                ):
                    info = tarfile.TarInfo(path)
                    info.size, info.mtime = len(data), 0
                    out.addfile(info, io.BytesIO(data))
            tmp.rename(tar)
    return tar


def _skeleton(root: Path) -> bytes:
    """The layer: mount points, the /usr links of a merged-/usr root, and CONTAINER_ETC."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as out:
        for name in ("bin", "lib", "lib64", "sbin"):  # merged /usr: links into it
            out.add(root / name, arcname=name, recursive=False)
        for d, mode in (("usr", 0o755), ("tmp", 0o1777), ("var/tmp", 0o1777), ("root", 0o700), ("etc", 0o755)):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, mode
            out.addfile(info)
        for name in CONTAINER_ETC:
            if (root / "etc" / name).exists() or (root / "etc" / name).is_symlink():
                out.add(root / "etc" / name, arcname=f"etc/{name}")
    return buf.getvalue()


def _build(root: Path, packages: list[str], customize: object) -> None:
    if shutil.which("mmdebstrap") is None:
        raise LabError("mmdebstrap is missing (the lab builds its Sparks' root with it): run scripts/setup.sh")
    tmp = root.with_name(root.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    # the apt cache kept: the lab's mirror takes its packages from it (`lab.mirror.make`)
    argv = ["mmdebstrap", "--variant=minbase", "--quiet", "--skip=cleanup/apt/cache"]
    argv += [f"--include={','.join(packages)}", SUITE, str(tmp)]
    try:
        # package scripts must not start daemons on this machine (dockerd would set FORWARD to DROP)
        res = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        raise LabError(f"building the lab image {root.name} took over 30 minutes") from None
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise LabError(f"building the lab image {root.name} failed: {(res.stderr or res.stdout).strip()[-800:]}")
    assert callable(customize)
    customize(tmp)
    (tmp / ".complete").write_text("")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    _prune(keep=root.name)


def _prune(keep: str) -> None:
    """Images of the same kind made of something else (an older sparkfab's), while no lab is up.
    Standard library only, as the rest of the build: scripts/setup.sh builds the image with the
    checkout on PYTHONPATH while sparkfab's environment is still being installed."""
    from sparkfab.lab import links

    try:
        names = os.listdir(links.NETNS_DIR)
    except OSError:
        names = []
    if any(n.startswith("sf-") for n in names):
        return
    digest = keep.split("-")[1]  # every variant of the current image stays
    for old in [*base().glob("spark-*"), *base().glob("container-*"), *base().glob(".*.lock")]:
        if digest not in old.name:
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)


def _install(root: Path, name: str, dest: str, mode: int = 0o644) -> None:
    target = root / dest.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_files() / name, target)
    os.chmod(target, mode)


def _customize_machine(root: Path, how: Shipped = Shipped()) -> None:
    """What turns a Debian root into a lab Spark (the per-Spark part is `lab.machine`'s), as the
    variant `how` arrives."""
    without = how.without
    mirror.make(root, without)
    _install(root, "sparkfab-lab-hw", "/usr/local/sbin/sparkfab-lab-hw", 0o755)
    _install(root, "sparkfab-lab-hw.service", "/etc/systemd/system/sparkfab-lab-hw.service")
    _install(root, "sparkfab-lab-cgroup.service", "/etc/systemd/system/sparkfab-lab-cgroup.service")
    _install(root, "sparkfab-lab-runc", "/usr/local/sbin/sparkfab-lab-runc", 0o755)
    _install(root, "nvidia-container-runtime-hook", "/usr/local/bin/nvidia-container-runtime-hook", 0o755)
    _install(root, "udevadm", "/usr/local/bin/udevadm", 0o755)
    if "lldpd" not in without:
        _install(root, "lldpd.conf", "/etc/lldpd.d/sparkfab-lab.conf")
    _install(root, "sshd.conf", "/etc/ssh/sshd_config.d/sparkfab-lab.conf")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # each Spark gets its own (lab.machine)
    systemctl = ["systemctl", f"--root={root}"]
    network = "NetworkManager.service" if how.network_manager else "systemd-networkd.service"
    proc.run([*systemctl, "enable", network, "sparkfab-lab-hw.service", "sparkfab-lab-cgroup.service"])
    if how.network_manager:
        proc.run([*systemctl, "disable", "systemd-networkd.service", "systemd-networkd.socket"])
        (root / "etc/netplan").mkdir(parents=True, exist_ok=True)
        (root / "etc/netplan/01-network-manager-all.yaml").write_text(NM_NETPLAN)
        os.chmod(root / "etc/netplan/01-network-manager-all.yaml", 0o600)
    proc.run([*systemctl, "mask", *MASKED])
    proc.run(["chroot", str(root), "useradd", "--uid", str(LOGIN_UID), "--create-home", "--shell", "/bin/bash", LOGIN])
    proc.run(["chroot", str(root), "chpasswd"], input_text=f"{LOGIN}:{LOGIN_PASSWORD}\n")
    (root / "etc/sudoers.d/sparkfab-lab").write_text(SUDOERS)
    os.chmod(root / "etc/sudoers.d/sparkfab-lab", 0o440)
    (root / "etc/hostname").write_text("spark\n")
    (root / "etc/machine-id").write_text("")  # each boot of each Spark makes its own
