"""The lab's non-root login: one Spark of every lab is reached as a user that is not root and
becomes root through sudo, as a real Spark is (its owner logs in, then sudo), so the push and
the checks are rehearsed both ways.

Network namespaces share this machine's users, so the user is a real one here: named with the
lab's prefix (`sf-<cluster>`), marked as the lab's in its comment, with passwordless sudo from
`/etc/sudoers.d/sparkfab-lab-<cluster>`, a home inside the lab directory, and removed by
`lab down` (only if it is the lab's own).
"""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab.spec import LabSpec, Node

SUDOERS = Path("/etc/sudoers.d")


def user_name(cluster: str) -> str:
    return f"sf-{cluster}"[:32]


def _comment(cluster: str) -> str:
    return f"sparkfab lab {cluster}"


def sudoers_path(cluster: str) -> Path:
    return SUDOERS / f"sparkfab-lab-{cluster}"  # sudo skips names with '.' or '~'


def login_of(spec: LabSpec, node: Node) -> str:
    """The user a Spark of the lab is reached as: the last Spark's is not root."""
    return user_name(spec.cluster) if node.name == spec.sparks[-1].name else "root"


def _ours(cluster: str) -> pwd.struct_passwd | None:
    try:
        entry = pwd.getpwnam(user_name(cluster))
    except KeyError:
        return None
    if entry.pw_gecos != _comment(cluster):
        raise LabError(f"user {entry.pw_name} exists on this machine and is not lab {cluster}'s: remove or rename it")
    return entry


def create(spec: LabSpec) -> None:
    name, home = user_name(spec.cluster), spec.dir / "home"
    if shutil.which("sudo") is None:
        raise LabError("sudo is missing (the lab's non-root login needs it): run scripts/setup.sh as root")
    if _ours(spec.cluster) is None:
        flags = ["--system", "--user-group", "--shell", "/bin/sh", "--home-dir", str(home)]
        proc.run(["useradd", *flags, "--comment", _comment(spec.cluster), name])
    # '*' instead of useradd's '!': no password, and not locked (sshd refuses a locked user's key)
    proc.run(["usermod", "--password", "*", name])
    entry = pwd.getpwnam(name)
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    rule = f"# {_comment(spec.cluster)}: becomes root as on a Spark\n{name} ALL=(ALL:ALL) NOPASSWD: ALL\n"
    tmp = spec.dir / "sudoers.tmp"
    tmp.write_text(rule)
    os.chmod(tmp, 0o440)
    proc.run(["visudo", "-c", "-q", "-f", str(tmp)])
    shutil.move(str(tmp), sudoers_path(spec.cluster))


def authorize(spec: LabSpec, ssh_dir: Path, public_key: Path) -> None:
    """`<ssh_dir>/authorized_keys.d/<user>` for root and the lab user (sshd reads it as the user)."""
    keys = ssh_dir / "authorized_keys.d"
    keys.mkdir(mode=0o755, exist_ok=True)
    for user in ("root", user_name(spec.cluster)):
        f = keys / user
        shutil.copy(public_key, f)
        entry = pwd.getpwnam(user)
        os.chown(f, entry.pw_uid, entry.pw_gid)
        os.chmod(f, 0o600)


def remove(cluster: str) -> bool:
    """Remove the lab's user and its sudo rule; True if there was one."""
    sudoers_path(cluster).unlink(missing_ok=True)
    try:
        entry = _ours(cluster)
    except LabError:
        return False  # someone else's: never touched
    if entry is None:
        return False
    proc.run(["userdel", entry.pw_name])
    return True


def leftovers(cluster: str) -> list[str]:
    found = [f"file {sudoers_path(cluster)}"] if sudoers_path(cluster).exists() else []
    try:
        if _ours(cluster) is not None:
            found.append(f"user {user_name(cluster)}")
    except LabError:
        pass
    return found
