"""The environment a run of ansible-playbook gets: what it takes from sparkfab's own (an allow
list that never carries a secret), and the strategy that makes the run fast (Mitogen's, where it
is installed)."""

from __future__ import annotations

import configparser
import importlib.util
from pathlib import Path

from sparkfab.engines.recipes import is_secret_name
from sparkfab.inventory.ansiblecfg import read_users_config

#: what a run of ansible-playbook takes from sparkfab's environment: where things are, the
#: locale, the ssh agent, proxies and the user's own ANSIBLE_* settings (no secret among them)
RUN_ENV = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "LANG", "LANGUAGE"),
        *("SSH_AUTH_SOCK", "SSH_AGENT_PID", "KRB5CCNAME"),
        *("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
        # other packages' Python warnings, kept out of the run's output unless -v (sparkfab.others)
        "PYTHONWARNINGS",
    }
)
RUN_ENV_PREFIXES = ("LC_", "ANSIBLE_")


def run_env(environ: dict[str, str]) -> dict[str, str]:
    """The part of `environ` a run gets: the names above, never one that holds a secret."""
    return {
        k: v
        for k, v in environ.items()
        if (k in RUN_ENV or k.startswith(RUN_ENV_PREFIXES)) and not is_secret_name(k.removeprefix("ANSIBLE_"))
    }


#: how long a host may stay silent before its connection is dropped: ssh's ServerAliveInterval
#: and ServerAliveCountMax, as ansible.cfg's ssh_args and sparkfab's own ssh_config set them
KEEPALIVE = (5, 6)

#: set to 0 to run the playbooks with Ansible's own strategy even where Mitogen is installed
ACCELERATOR_ENV = "SPARKFAB_MITOGEN"


def strategy_env(environ: dict[str, str]) -> dict[str, str]:
    """Mitogen for Ansible's linear strategy where it is installed: one Python per host for the
    whole run and each module shipped once, about half the time of a push that changes nothing.
    The user's own ANSIBLE_STRATEGY wins, and SPARKFAB_MITOGEN=0 turns it off; the playbooks do
    not depend on it (plain `ansible-playbook` runs them with Ansible's own strategy)."""
    if "ANSIBLE_STRATEGY" in environ or environ.get(ACCELERATOR_ENV, "1") == "0":
        return {}
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or spec.origin is None:
        return {}
    plugins = Path(spec.origin).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": "mitogen_linear"}


def strategy_vars(env: dict[str, str]) -> dict[str, int]:
    """The variables a run under `env`'s strategy needs: Mitogen starts ssh with its own
    keepalive options ahead of ansible.cfg's (ssh takes the first), 30 s x 10 unless told, so a
    host gone silent would hold the run for 5 minutes instead of 30 s."""
    if env.get("ANSIBLE_STRATEGY", "").startswith("mitogen"):
        interval, count = KEEPALIVE
        return {"mitogen_ssh_keepalive_interval": interval, "mitogen_ssh_keepalive_count": count}
    return {}


#: what a run needs from sparkfab's ansible.cfg whatever the user's says, by the environment
#: variable Ansible reads for it (an environment variable wins over any ansible.cfg)
_SHIPPED_KEYS = {
    ("defaults", "forks"): "ANSIBLE_FORKS",
    ("defaults", "interpreter_python"): "ANSIBLE_PYTHON_INTERPRETER",
    ("defaults", "timeout"): "ANSIBLE_TIMEOUT",
    ("defaults", "task_timeout"): "ANSIBLE_TASK_TIMEOUT",
    ("defaults", "retry_files_enabled"): "ANSIBLE_RETRY_FILES_ENABLED",
    ("ssh_connection", "pipelining"): "ANSIBLE_PIPELINING",
}
#: paths in the environment that a run started in another directory must get absolute
_PATH_ENV = ("ANSIBLE_CONFIG", "ANSIBLE_VAULT_PASSWORD_FILE", "ANSIBLE_PRIVATE_KEY_FILE")


#: where Ansible looks for collections when nothing says otherwise
_COLLECTIONS_DEFAULT = ("~/.ansible/collections", "/usr/share/ansible/collections")


def config_env(shipped: Path, collections: Path, environ: dict[str, str], cwd: Path) -> dict[str, str]:
    """The variables that make a run read the user's own ansible.cfg (their remote_user,
    private_key_file, vault_password_file, become settings, callbacks...) merged with what
    sparkfab's playbooks need: its collection (`collections`, a collections path) first on the
    collections path, ahead of the user's own (a `sparkfab.fabric` they installed included), its ssh
    arguments (keepalives, host keys, multiplexing) ahead of the user's, and its bounds where the
    user's config sets none. Without a config of the user's, sparkfab's own is the run's."""
    import os

    out = {k: str((cwd / os.path.expanduser(environ[k])).resolve()) for k in _PATH_ENV if environ.get(k)}
    theirs = read_users_config(environ, cwd)
    their_paths = environ.get("ANSIBLE_COLLECTIONS_PATH") or environ.get("ANSIBLE_COLLECTIONS_PATHS")
    base = cwd
    if not their_paths and theirs is not None:
        their_paths = theirs.value("defaults", "collections_path") or theirs.value("defaults", "collections_paths")
        base = theirs.path.parent
    paths = [str(collections)] + [
        str((base / os.path.expanduser(p)).resolve())
        for p in (their_paths.split(os.pathsep) if their_paths else _COLLECTIONS_DEFAULT)
        if p
    ]
    out["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(paths)
    if theirs is None or theirs.path == shipped.resolve():
        return {**out, "ANSIBLE_CONFIG": str(shipped)}
    ours = configparser.ConfigParser(interpolation=None)
    ours.read(shipped)
    user = theirs.path
    out["ANSIBLE_CONFIG"] = str(user)
    their_ssh = environ.get("ANSIBLE_SSH_ARGS") or theirs.value("ssh_connection", "ssh_args")
    out["ANSIBLE_SSH_ARGS"] = " ".join(x for x in (ours.get("ssh_connection", "ssh_args"), their_ssh) if x)
    for (section, key), name in _SHIPPED_KEYS.items():
        if name not in environ and not theirs.has(section, key) and ours.has_option(section, key):
            out[name] = ours.get(section, key)
    return out


def login_defaults(environ: dict[str, str], cwd: Path) -> dict[str, str]:
    """The login Ansible uses for a host that sets none: ANSIBLE_REMOTE_USER and
    ANSIBLE_PRIVATE_KEY_FILE, else the user's ansible.cfg `remote_user` and `private_key_file`."""
    import os

    from sparkfab.errors import UsageError
    from sparkfab.inventory.problems import user_name_ok

    cfg = read_users_config(environ, cwd)
    out = {}
    where = "ANSIBLE_REMOTE_USER" if environ.get("ANSIBLE_REMOTE_USER") else f"{cfg.path if cfg else ''}: remote_user"
    user = environ.get("ANSIBLE_REMOTE_USER") or (cfg.value("defaults", "remote_user") if cfg else "")
    if user and not user_name_ok(user):
        # the same rule as an inventory's ansible_user: one line, a user name (it lands in ssh_config)
        raise UsageError(f"{where}: {user[:60]!r} is not a valid user name (a login name: letters, digits, _ . @ -)")
    if user:
        out["ansible_user"] = user
    # a path in ansible.cfg is relative to the file, one in the environment to the working directory
    key, base = environ.get("ANSIBLE_PRIVATE_KEY_FILE"), cwd
    where = "ANSIBLE_PRIVATE_KEY_FILE"
    if not key and cfg is not None:
        key, base = cfg.value("defaults", "private_key_file"), cfg.path.parent
        where = f"{cfg.path}: private_key_file"
    if key and any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise UsageError(f"{where}: {key[:60]!r} breaks a line (a continuation line, or a control character)")
    if key:
        out["ansible_ssh_private_key_file"] = str(base / os.path.expanduser(key))
    return out
