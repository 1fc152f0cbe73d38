"""The lab site's package mirror: what a lab Spark's apt installs from.

A Spark as shipped lacks packages the fabric needs (nftables for a ring's firewall), and
`sparkfab apply` installs them with Ansible's `apt`, as on a site. A lab Spark has no network
beyond the lab, so its image carries a small Debian repository of those packages, as an
air-gapped site's mirror would, and its apt reads that alone: the packages are left out of the
installed system (`SHIPPED_WITHOUT`), their `.deb` files, as mmdebstrap fetched them for the
image, go into the mirror with an index apt reads (Packages, Release), and `apt-get update`
runs once in the image so that the mirror is known at first boot.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError

#: what a Spark as shipped does not have and the lab's mirror carries (apply installs them);
#: nftables' library goes with it (nothing else in the image needs it)
SHIPPED_WITHOUT = ("nftables", "libnftables1")
#: the mirror inside a lab Spark's root, and the line apt reads it from (a flat repository)
MIRROR = "srv/sparkfab-lab-mirror"
SOURCES = (
    "# a lab Spark reaches no network beyond the lab: its apt reads the lab site's mirror\n"
    f"deb [trusted=yes] file:/{MIRROR} ./\n"
)


def _field(deb: Path, name: str) -> str:
    return proc.run(["dpkg-deb", "--field", str(deb), name]).stdout.strip()


def _stanza(deb: Path) -> str:
    """The deb's Packages entry: its control file with where it is and what it hashes to."""
    control = proc.run(["dpkg-deb", "--field", str(deb)]).stdout.rstrip("\n")
    data = deb.read_bytes()
    return (
        f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
        f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"
    )


def _release(packages: bytes) -> str:
    return (
        "Origin: sparkfab-lab\nLabel: sparkfab lab mirror\nSuite: lab\nCodename: lab\n"
        "Date: Thu, 01 Jan 2026 00:00:00 UTC\nArchitectures: amd64 all\n"
        f"SHA256:\n {hashlib.sha256(packages).hexdigest()} {len(packages)} Packages\n"
    )


def index(folder: Path) -> None:
    """The index apt reads a flat repository of `folder`'s .deb files by (Packages, Release)."""
    packages = "\n".join(_stanza(deb) for deb in sorted(folder.glob("*.deb"))).encode()
    (folder / "Packages").write_bytes(packages)
    (folder / "Release").write_text(_release(packages))


def make(root: Path, also: tuple[str, ...] = ()) -> None:
    """Move `SHIPPED_WITHOUT` (and `also`: a variant's own, lldpd for a Spark shipped without it)
    out of the image `root` (built with its apt cache kept) into its mirror, point its apt at the
    mirror alone, and empty the cache."""
    without = (*SHIPPED_WITHOUT, *also)
    archives = root / "var/cache/apt/archives"
    debs = {_field(d, "Package"): d for d in archives.glob("*.deb")}
    missing = [p for p in without if p not in debs]
    if missing:
        raise LabError(f"the lab image's build kept no .deb of {', '.join(missing)} for the lab's mirror")
    mirror = root / MIRROR
    mirror.mkdir(parents=True, exist_ok=True)
    for name in without:
        shutil.copy2(debs[name], mirror / debs[name].name)
    index(mirror)
    for d in archives.glob("*.deb"):
        d.unlink()
    for listing in (root / "etc/apt/sources.list.d").glob("*"):
        listing.unlink()
    (root / "etc/apt/sources.list").write_text(SOURCES)
    chroot = ["chroot", str(root)]
    res = subprocess.run([*chroot, "apt-get", "update", "-qq"], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise LabError(f"apt-get update on the lab's mirror failed: {(res.stderr or res.stdout).strip()[-800:]}")
    proc.run([*chroot, "dpkg", "--purge", *without])
