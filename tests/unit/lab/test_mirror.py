"""The lab site's mirror: the index it writes is one apt itself reads (a flat repository), and
apt then offers its packages, as a lab Spark's `apt-get install` finds nftables there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sparkfab.lab import mirror

pytestmark = pytest.mark.skipif(
    shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None, reason="needs apt and dpkg"
)


def _deb(folder: Path, name: str, version: str) -> None:
    tree = folder / f"{name}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: lab <lab@example.invalid>\n"
        f"Description: a package of the lab's mirror test\n"
    )
    subprocess.run(
        ["dpkg-deb", "--build", "--root-owner-group", str(tree), str(folder / f"{name}_{version}_all.deb")],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(tree)


def _apt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """apt with every folder of its own under `root` (this machine's apt state untouched)."""
    opts = ["-o", f"Dir={root}", "-o", "Dir::State::status=" + str(root / "status"), "-o", "Debug::NoLocking=1"]
    opts += ["-o", "APT::Sandbox::User=root"]
    return subprocess.run([*args[:1], *opts, *args[1:]], capture_output=True, text=True, timeout=60)


def test_apt_reads_the_mirrors_index_and_offers_its_packages(tmp_path):
    repo = tmp_path / "mirror"
    repo.mkdir()
    _deb(repo, "sparkfab-lab-probe", "1.2-3")
    _deb(repo, "sparkfab-lab-other", "0.1")
    mirror.index(repo)
    root = tmp_path / "apt"
    for d in (
        "etc/apt/sources.list.d",
        "etc/apt/preferences.d",
        "etc/apt/apt.conf.d",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
    ):
        (root / d).mkdir(parents=True)
    (root / "status").write_text("")
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{repo} ./\n")
    updated = _apt(root, "apt-get", "update")
    assert updated.returncode == 0, updated.stderr
    assert "W:" not in updated.stderr and "E:" not in updated.stderr, updated.stderr
    policy = _apt(root, "apt-cache", "policy", "sparkfab-lab-probe")
    assert "Candidate: 1.2-3" in policy.stdout, policy.stdout + policy.stderr
    # apt takes a file: repository's packages in place, checking each against the index's size
    # and hashes (a wrong one: "Hash Sum mismatch")
    fetched = _apt(root, "apt-get", "install", "--download-only", "-y", "sparkfab-lab-probe", "sparkfab-lab-other")
    assert fetched.returncode == 0, fetched.stderr
