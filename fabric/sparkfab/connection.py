"""How sparkfab's own programs reach a cluster's hosts: the way Ansible does.

verify, preflight and discover log in with what Ansible's variables say for each host (user,
port, key, jump host and other ssh arguments, wherever in the inventory they are written, as
Ansible templates them, with ansible.cfg's remote_user and private_key_file where a host says
none), then what the user's ~/.ssh/config says, multiplexed, and become root through sudo as the
plays do, with the become password the variables give (a vaulted one opened by Ansible in a
child), typed on sudo's stdin (`as_root`); `sudo -n` without one. In the lab
they use the lab's own ssh_config (its keys and known hosts). `Target.connection`
builds one `Connection` per verb.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkfab import paths
from sparkfab.errors import UsageError
from sparkfab.paths import LabPaths
from sparkfab.plan import Plan
from sparkfab.render import sshconfig
from sparkfab.render.sshconfig import Block, multiplexed


@dataclass(frozen=True)
class Become:
    """How a host's login becomes root, as Ansible's variables say: the method, and the password
    sudo asks for where one is set (held in memory only; sudo reads it on stdin)."""

    method: str = "sudo"
    password: str | None = None


@dataclass(frozen=True)
class Connection:
    ssh_config: str  # the ssh_config every connection reads
    alias: dict[str, str]  # host -> its Host pattern in that ssh_config
    become: dict[str, Become] = field(default_factory=dict)  # host -> how it becomes root

    def remote(self, host: str) -> Any:
        """A testinfra host for `host` (ssh backend; nothing is sent until a command runs), with
        how it becomes root (`as_root` reads it)."""
        th = connect(self.alias[host], self.ssh_config)
        th.sparkfab_become = self.become.get(host, Become())
        return th


def connect(spec: str, ssh_config: str) -> Any:
    import testinfra

    return testinfra.get_host(f"ssh://{spec}", ssh_config=ssh_config)


def for_plan(plan: Plan, workdir: Path, lab_dir: Path | None = None) -> Connection:
    """The lab's ssh_config (`lab_dir`), or one written into `workdir` for real hosts (with a ControlPath).

    Each host is named as Ansible's ssh names it, by its `ansible_host`, so the user's own
    ~/.ssh/config (included after sparkfab's lines) applies to it as it does to Ansible: a
    `Host 192.0.2.*` block, or an alias whose HostName and Port are written there. Hosts that
    share an address (a jump host's ports) keep their inventory names.
    """
    if lab_dir is not None:
        return Connection(str(LabPaths(lab_dir).ssh_config), {h.name: h.name for h in plan.hosts}, become_of(plan))
    workdir.mkdir(parents=True, exist_ok=True)
    mux = multiplexed(control_dir(workdir))
    addresses = [h.mgmt_address for h in plan.hosts]
    by_address = len(set(addresses)) == len(addresses)
    alias = {h.name: h.mgmt_address if by_address else h.name for h in plan.hosts}
    from sparkfab.push.env import login_defaults

    defaults = login_defaults(dict(os.environ), Path.cwd())  # read once for every host
    blocks = [
        Block(
            (alias[h.name],),
            (
                *(() if by_address else (f"HostName {h.mgmt_address}",)),
                *ssh_options(with_defaults(h.ansible, defaults)),
                *mux,
            ),
        )
        for h in plan.hosts
    ]
    comment = f"sparkfab: the hosts of {plan.cluster} as Ansible reaches them (generated)"
    cfg = workdir / "ssh_config"
    cfg.write_text(sshconfig.ssh_config(comment, blocks, users_ssh_config()))
    os.chmod(cfg, 0o600)
    return Connection(str(cfg), alias, become_of(plan))


#: Ansible's names of the become password, in the order it prefers them
BECOME_PASSWORDS = ("ansible_become_password", "ansible_become_pass", "ansible_sudo_pass", "ansible_sudo_password")


def become_of(plan: Plan) -> dict[str, Become]:
    """Each host's become method and password as its variables say; a vaulted password is
    opened by Ansible in a child process (`inventory.ansible.decrypt`) and kept in memory."""
    from sparkfab.files import yamlload

    def vaulted(value: Any) -> bool:
        return isinstance(value, yamlload.Tagged) and value.tag == "!vault"

    found: dict[str, tuple[str, Any]] = {}
    for h in plan.hosts:
        method = str(h.ansible.get("ansible_become_method") or "sudo")
        password = next((h.ansible[k] for k in BECOME_PASSWORDS if h.ansible.get(k) not in (None, "")), None)
        found[h.name] = (method, password)
    ciphertexts = sorted({str(p) for _, p in found.values() if vaulted(p)})
    clear: dict[str, str] = {}
    if ciphertexts:
        from sparkfab.inventory.ansible import decrypt

        clear = dict(zip(ciphertexts, decrypt(ciphertexts), strict=True))
    out = {}
    for name, (method, p) in found.items():
        out[name] = Become(method, None if p is None else clear[str(p)] if vaulted(p) else str(p))
    return out


_USERS = ("ansible_user", "ansible_ssh_user", "ansible_remote_user")
_KEYS = ("ansible_ssh_private_key_file", "ansible_private_key_file")


def with_defaults(ansible: dict[str, Any], defaults: dict[str, str]) -> dict[str, Any]:
    """A host's variables with the login Ansible falls back to where they set none (`defaults`:
    its environment, then the user's ansible.cfg, as `push.env.login_defaults` reads them)."""
    out = dict(ansible)
    if not any(out.get(k) for k in _USERS) and "ansible_user" in defaults:
        out["ansible_user"] = defaults["ansible_user"]
    if not any(out.get(k) for k in _KEYS) and "ansible_ssh_private_key_file" in defaults:
        out["ansible_ssh_private_key_file"] = defaults["ansible_ssh_private_key_file"]
    return out


def users_ssh_config() -> Path | None:
    """~/.ssh/config, which ssh reads unless told `-F` (as sparkfab's checks are)."""
    path = Path(os.path.expanduser("~/.ssh/config"))
    return path if path.is_file() else None


def control_dir(workdir: Path) -> Path:
    """Where the multiplexed ssh sockets go: beside the state, unless that path is too long
    for a Unix socket (108 bytes with `cm-` and a 40-character %C); then a short private
    directory in /tmp named after it."""
    if len(str(workdir)) + len("/cm-") + 40 < 100:
        return workdir
    private = paths.private_tmp()
    if private is None:
        raise UsageError(
            f"{paths.TMP_ROOT}/sparkfab-{os.getuid()} is not a directory of this user's alone: "
            "ssh's multiplexed sockets cannot go there (remove it, or give sparkfab a shorter state path)"
        )
    short = private / hashlib.sha1(str(workdir).encode()).hexdigest()[:8]
    short.mkdir(mode=0o700, exist_ok=True)
    return short


#: ssh's own options that Ansible's ssh arguments may carry, as ssh_config keywords
_FLAGS = {"-J": "ProxyJump", "-i": "IdentityFile", "-p": "Port", "-l": "User", "-F": "Include"}


def _one_word(path: str) -> str:
    """A path as one ssh_config word: quoted where it holds a space (a key file named
    `/k -oProxyCommand=x` stays a file name, as Ansible's one `-o IdentityFile=...` keeps it)."""
    if '"' in path:
        raise UsageError(f"the private key file {path!r} holds a double quote, which ssh_config cannot write")
    return f'"{path}"' if any(c.isspace() for c in path) else path


def ssh_options(ansible: dict[str, Any]) -> list[str]:
    """The ssh_config lines that reach a host the way Ansible's ssh connection does: its user
    (unset: ssh's default, the local user, as Ansible leaves it),
    port and key (the `ansible_ssh_*` aliases too), and what `ansible_ssh_common_args` and
    `ansible_ssh_extra_args` pass to ssh (-o, -J, -i, -p, -l, -F); the first value wins in an
    ssh_config, so the variables come before the free-form arguments, as on Ansible's command line."""

    def var(*names: str) -> Any:
        return next((ansible[n] for n in names if ansible.get(n) not in (None, "")), None)

    user = var("ansible_user", "ansible_ssh_user", "ansible_remote_user")
    out = [f"User {user}"] if user else []  # none set: ssh's own default, as with Ansible
    port = var("ansible_port", "ansible_ssh_port")
    out += [f"Port {port}"] if port is not None else []
    key = var("ansible_ssh_private_key_file", "ansible_private_key_file")
    out += [f"IdentityFile {_one_word(str(key))}", "IdentitiesOnly yes"] if key else []
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        words = shlex.split(str(ansible.get(name) or ""))
        i = 0
        while i < len(words):
            flag = words[i]
            value = words[i + 1] if i + 1 < len(words) else ""
            if flag == "-o" and value:
                k, _, v = value.partition("=")
                out.append(f"{k} {v}" if v else value)
                i += 2
            elif flag in _FLAGS and value:
                out.append(f"{_FLAGS[flag]} {value}")
                i += 2
            elif flag.startswith("-o") and len(flag) > 2:
                k, _, v = flag[2:].partition("=")
                out.append(f"{k} {v}")
                i += 1
            else:
                i += 1
    for line in out:  # one rule for every ssh-facing value, whatever its source
        if any(ord(c) < 32 or ord(c) == 127 for c in line):
            raise UsageError(f"an ssh option would break a line of the ssh_config: {line!r}: write it on one line")
    return out


class NoRoot(Exception):
    """The login works but cannot become root without a password."""


def as_root(th: Any) -> Any:  # a testinfra Host: its backend is switched to sudo
    """Make every later command on `th` run as root, as the plays do (`become: true`): through
    sudo when the login user is not root, with the become password Ansible's variables give
    (`connection.Become`, on `th.sparkfab_become`) typed on sudo's stdin, never on a command
    line; without one, `sudo -n`. Raises when the host does not answer, and NoRoot when the
    login cannot become root that way."""
    try:
        login = th.run("id -un; id -u")
    except RuntimeError as exc:  # testinfra raises on ssh's own failure (exit 255), with the result
        login = exc.args[0] if exc.args and hasattr(exc.args[0], "stderr") else None
        if login is None:
            raise
    if login.rc != 0:
        lines = (login.stderr or login.stdout).strip().splitlines()
        raise ConnectionError(lines[-1][:200] if lines else f"ssh exited with {login.rc}")
    who = login.stdout.split()
    if who[-1] == "0":
        return th
    become = getattr(th, "sparkfab_become", None)
    method, password = (become.method, become.password) if become is not None else ("sudo", None)
    if method != "sudo":
        raise NoRoot(f"{who[0]} becomes root with {method} (ansible_become_method): sparkfab's checks use sudo only")
    backend = th.backend
    backend.sudo = True
    how = "sudo -n"
    if password is None:
        backend.get_sudo_command = lambda command, user: backend.quote("sudo -n /bin/sh -c %s", command)
    else:
        how = "sudo with the become password"
        backend.get_sudo_command = lambda command, user: backend.quote("sudo -S -p '' /bin/sh -c %s", command)
        _typed_on_stdin(backend, password)
    probe = th.run("id -u")
    if probe.rc != 0 or probe.stdout.strip() != "0":
        detail = (probe.stderr or probe.stdout).strip().splitlines()
        raise NoRoot(f"{who[0]} cannot become root with {how}: {detail[-1][:160] if detail else 'no answer'}")
    th.sparkfab_how = how
    return th


def _typed_on_stdin(backend: Any, password: str) -> None:
    """Every later command of this testinfra backend gets `password` on its stdin, which ssh
    carries to sudo -S on the host (testinfra's own run_local hands an empty stdin)."""
    import subprocess

    line = (password + "\n").encode()

    def run_local(command: str, *args: str) -> Any:
        cmd = backend.encode(backend.quote(command, *args))
        p = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate(line)
        return backend.result(p.returncode, cmd, out, err)

    backend.run_local = run_local
