"""The environment a run of ansible-playbook gets: what it takes from sparkfab's own (an allow
list that never carries a secret), and the strategy that makes the run fast (Mitogen's, where it
is installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sparkfab.launchers import is_secret_name

#: what a run of ansible-playbook takes from sparkfab's environment: where things are, the
#: locale, the ssh agent, proxies and the user's own ANSIBLE_* settings (no secret among them)
RUN_ENV = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "LANG", "LANGUAGE"),
        *("SSH_AUTH_SOCK", "SSH_AGENT_PID", "KRB5CCNAME"),
        *("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
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
