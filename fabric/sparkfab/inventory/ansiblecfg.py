"""Ansible's configuration and the vault password files it names, as Ansible finds them, read
safely: where its ansible.cfg is (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible),
its values, and a check of every file Ansible would open while it reads an inventory (a FIFO
blocks the reader, a device never ends), made before a child of Ansible opens them."""

from __future__ import annotations

import configparser
from pathlib import Path


def users_config(environ: dict[str, str], cwd: Path) -> Path | None:
    """The ansible.cfg Ansible would read here, as it looks for one: ANSIBLE_CONFIG, then
    ./ansible.cfg (not in a world-writable directory), ~/.ansible.cfg, /etc/ansible/ansible.cfg."""
    import os
    import stat

    named = environ.get("ANSIBLE_CONFIG")
    if named:
        path = (cwd / os.path.expanduser(named)).resolve()
        if path.is_dir():
            path = path / "ansible.cfg"
        _not_a_pipe(path)
        return path if path.is_file() else None
    here = cwd / "ansible.cfg"
    try:
        safe = not cwd.stat().st_mode & stat.S_IWOTH
    except OSError:
        safe = False
    home = Path(environ.get("HOME") or Path.home())
    for candidate in ([here] if safe else []) + [home / ".ansible.cfg", Path("/etc/ansible/ansible.cfg")]:
        _not_a_pipe(candidate)
        if candidate.is_file():
            return candidate.resolve()
    return None


def check_ansible_files(environ: dict[str, str], cwd: Path) -> None:
    """What Ansible opens while it reads an inventory, checked before a child of it does: its
    configuration (`users_config`) and every vault password file it would read (the environment's,
    the configuration's, those of vault ids), each a regular file of at most 1 MiB: a FIFO blocks
    the reader, a device such as /dev/zero never ends. A password file that is a program is
    Ansible's to run, as it runs it."""
    import os

    from sparkfab.files import userfile

    cfg = read_users_config(environ, cwd)
    named: list[tuple[str, Path]] = []
    if environ.get("ANSIBLE_VAULT_PASSWORD_FILE"):
        named.append(("ANSIBLE_VAULT_PASSWORD_FILE", cwd / os.path.expanduser(environ["ANSIBLE_VAULT_PASSWORD_FILE"])))
    elif cfg is not None and cfg.value("defaults", "vault_password_file"):
        where = cfg.path.parent / os.path.expanduser(cfg.value("defaults", "vault_password_file"))
        named.append((f"{cfg.path}: vault_password_file", where))
    ids = environ.get("ANSIBLE_VAULT_IDENTITY_LIST") or (cfg.value("defaults", "vault_identity_list") if cfg else "")
    for item in (x.strip() for x in ids.split(",") if "@" in x):
        source = item.split("@", 1)[1]
        if source and source != "prompt":
            named.append((f"vault id {item}", cwd / os.path.expanduser(source)))
    for what, path in named:
        if path.exists() and not os.access(path, os.X_OK):
            userfile.read_bytes(path, f"vault password file ({what})", 1 << 20)


def _not_a_pipe(path: Path) -> None:
    """Refuse a configuration Ansible would open that is there but is no regular file (a FIFO
    blocks whoever opens it: sparkfab's reader and Ansible's own, in the child)."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        from sparkfab.errors import UsageError

        raise UsageError(f"{path}: Ansible's configuration is not a regular file (a FIFO, device or socket)")


class UsersConfig:
    """The user's ansible.cfg, parsed once: where it is and its values (`value` is '' where unset)."""

    def __init__(self, path: Path, parser: configparser.ConfigParser) -> None:
        self.path = path
        self.parser = parser

    def value(self, section: str, key: str) -> str:
        return self.parser.get(section, key, fallback="") or ""

    def has(self, section: str, key: str) -> bool:
        return self.parser.has_option(section, key)


def read_users_config(environ: dict[str, str], cwd: Path) -> UsersConfig | None:
    """The ansible.cfg Ansible would read here (`users_config`), parsed; None where there is none.
    A file Ansible could not read either is refused with its name."""
    path = users_config(environ, cwd)
    if path is None:
        return None
    from sparkfab.errors import UsageError
    from sparkfab.files import userfile

    parser = configparser.ConfigParser(interpolation=None)
    try:
        text = userfile.read_bytes(path, "Ansible configuration", 1 << 20).decode("utf-8")
        parser.read_string(text, str(path))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: Ansible's configuration is not UTF-8 text (byte {exc.start})") from None
    except configparser.Error as exc:
        raise UsageError(
            f"{path}: Ansible's configuration cannot be read: {' '.join(str(exc).split())[:300]}"
        ) from None
    return UsersConfig(path, parser)
