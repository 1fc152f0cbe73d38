"""One connection model. Ansible, verify, discover and preflight reach a host with the
same user, port, key and jump host, wherever in the inventory they are written."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab.connection import for_plan, ssh_options
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan
from tests.conftest import REPO

SPLIT = REPO / "tests/data/split/ring4-ini/hosts.ini"


def _exe(name: str) -> str:
    exe = shutil.which(name, path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    assert exe, name
    return exe


@pytest.mark.parametrize(
    ("ansible", "want"),
    [
        ({}, []),  # no user: ssh's default, as Ansible leaves it
        ({"ansible_user": "ops", "ansible_port": 2222}, ["User ops", "Port 2222"]),
        ({"ansible_ssh_user": "old", "ansible_ssh_port": "2200"}, ["User old", "Port 2200"]),
        (
            {"ansible_ssh_private_key_file": "~/.ssh/spark", "ansible_ssh_common_args": "-J admin@bastion"},
            ["IdentityFile ~/.ssh/spark", "IdentitiesOnly yes", "ProxyJump admin@bastion"],
        ),
        (
            {
                "ansible_ssh_common_args": "-o ProxyJump=jump -o 'ServerAliveInterval 5'",
                "ansible_ssh_extra_args": "-oCompression=yes -v",
            },
            ["ProxyJump jump", "ServerAliveInterval 5", "Compression yes"],
        ),
    ],
)
def test_ssh_options_follow_ansibles_variables(ansible, want):
    assert ssh_options(ansible) == want


def _ssh_view(cfg: str, host: str) -> dict[str, str]:
    """What ssh itself makes of the config (`ssh -G`: nothing is sent)."""
    out = subprocess.run(["ssh", "-F", cfg, "-G", host], check=True, capture_output=True, text=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _ansible_view(inventory: Path, host: str) -> dict[str, object]:
    out = subprocess.run(
        [_exe("ansible-inventory"), "-i", str(inventory), "--host", host], check=True, capture_output=True, text=True
    ).stdout
    return {k: v for k, v in json.loads(out).items() if k.startswith("ansible_") and k != "ansible_host"}


def test_ssh_and_ansible_connect_as_the_split_inventory_says(tmp_path):
    plan = load_plan(str(SPLIT))
    conn = for_plan(plan, tmp_path)
    seen = _ssh_view(conn.ssh_config, conn.alias["spark-3d38"])
    assert (seen["user"], seen["port"], seen["hostname"]) == ("ops", "2222", "10.0.0.14")
    assert _ssh_view(conn.ssh_config, conn.alias["spark-329f"])["port"] == "22"
    # the rendered inventory apply pushes with gives Ansible the same settings as the user's own
    write_tree(render(plan), tmp_path / "tree")
    for host in ("spark-329f", "spark-3d38"):
        mine, theirs = _ansible_view(tmp_path / "tree/inventory.yml", host), _ansible_view(SPLIT, host)
        assert {k: str(v).lower() for k, v in mine.items()} == {k: str(v).lower() for k, v in theirs.items()}


def test_a_host_without_a_login_gets_the_one_ansible_falls_back_to(tmp_path, monkeypatch):
    """ANSIBLE_REMOTE_USER, else ansible.cfg's remote_user; its private_key_file relative to the file."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "ansible.cfg").write_text("[defaults]\nremote_user = ops\nprivate_key_file = keys/spark\n")
    monkeypatch.chdir(site)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.delenv("ANSIBLE_REMOTE_USER", raising=False)
    monkeypatch.delenv("ANSIBLE_PRIVATE_KEY_FILE", raising=False)
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    conn = for_plan(plan, tmp_path / "work")
    seen = _ssh_view(conn.ssh_config, conn.alias[plan.hosts[0].name])
    assert seen["user"] == "ops" and seen["identityfile"] == str(site / "keys/spark")
    monkeypatch.setenv("ANSIBLE_REMOTE_USER", "admin")
    conn = for_plan(plan, tmp_path / "work")
    assert _ssh_view(conn.ssh_config, conn.alias[plan.hosts[0].name])["user"] == "admin"


@pytest.mark.parametrize(
    "cfg,env",
    [
        ("[defaults]\nremote_user = ops\n  ProxyCommand touch {marker}\n", {}),
        ("[defaults]\nprivate_key_file = k\n  LocalCommand touch {marker}\n  PermitLocalCommand yes\n", {}),
        ("", {"ANSIBLE_REMOTE_USER": "ops\nProxyCommand touch {marker}"}),
    ],
    ids=["cfg-user-continuation", "cfg-key-continuation", "env-user-newline"],
)
def test_no_source_of_a_login_smuggles_an_option_into_ssh_config(tmp_path, monkeypatch, cfg, env):
    """ansible.cfg and ANSIBLE_* meet the rule an inventory's ansible_user meets: one line, a user
    name; refused with the source named, no ssh_config written with the extra option."""
    from sparkfab.errors import UsageError

    marker = tmp_path / "PWNED"
    site = tmp_path / "site"
    site.mkdir()
    (site / "ansible.cfg").write_text(cfg.format(marker=marker))
    monkeypatch.chdir(site)
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_REMOTE_USER", "ANSIBLE_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(marker=marker))
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    with pytest.raises(UsageError) as exc:
        for_plan(plan, tmp_path / "work")
    assert ("ANSIBLE_REMOTE_USER" if env else "ansible.cfg") in str(exc.value)
    assert not (tmp_path / "work/ssh_config").exists() and not marker.exists()


def test_a_key_file_with_spaces_stays_one_file_name(tmp_path, monkeypatch):
    """ANSIBLE_PRIVATE_KEY_FILE='/k -oProxyCommand=x': one IdentityFile, as ssh reads it (ssh -G)."""
    monkeypatch.setenv("ANSIBLE_PRIVATE_KEY_FILE", "/k -oProxyCommand=touch")
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    conn = for_plan(plan, tmp_path / "work")
    seen = _ssh_view(conn.ssh_config, conn.alias[plan.hosts[0].name])
    assert seen["identityfile"] == "/k -oProxyCommand=touch" and "proxycommand" not in seen


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_preflight_names_a_host_it_cannot_reach(cli, tmp_path, monkeypatch):
    """A real ssh to loopback, on a port nothing listens on: a blocker, exit 4."""
    port, other = _closed_port(), _closed_port()
    while other == port:  # two Sparks at one address and port are refused (one machine)
        other = _closed_port()
    text = (REPO / "inventory/pair-1cable.yml").read_text()
    text = text.replace(
        "spark-a: {ansible_host: 10.0.0.21}", f"spark-a: {{ansible_host: 127.0.0.1, ansible_port: {port}}}"
    )
    text = text.replace(
        "spark-b: {ansible_host: 10.0.0.22}", f"spark-b: {{ansible_host: 127.0.0.1, ansible_port: {other}}}"
    )
    (tmp_path / "inv.yml").write_text(text)
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    res = cli("preflight", str(tmp_path / "inv.yml"), "--format", "json")
    assert res.code == 4
    rows = json.loads(res.out)["results"]
    assert {(r["check"], r["host"], r["actual"], r["status"]) for r in rows} == {
        ("ssh", "spark-a", "unreachable", "fail"),
        ("ssh", "spark-b", "unreachable", "fail"),
    }
    assert all("Connection refused" in r["detail"] for r in rows), [r["detail"] for r in rows]
    # long work is not mute: a line as each part ends, none with -q
    assert "preflight: login, sudo, netdevs, RDMA, netplan files, clock on 2 hosts (2 rows, 2 blockers" in res.err
    quiet = cli("preflight", str(tmp_path / "inv.yml"), "--format", "json", "-q")
    assert quiet.code == 4 and "preflight:" not in quiet.err


class _Result:
    def __init__(self, rc: int, stdout: str = "", stderr: str = "") -> None:
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


class _Backend:
    sudo = False

    @staticmethod
    def quote(fmt: str, *args: str) -> str:
        import shlex

        return fmt % tuple(shlex.quote(a) for a in args)


class _Host:
    """A stand-in for a testinfra host: answers `id` as a login user would, with or without sudo."""

    def __init__(self, user: str, sudo_answer: _Result | None = None, ssh_error: str = "") -> None:
        self.backend, self.user, self.sudo_answer, self.ssh_error = _Backend(), user, sudo_answer, ssh_error
        self.commands: list[str] = []

    def run(self, command: str) -> _Result:
        if self.backend.sudo:
            command = self.backend.get_sudo_command(command, None)
        self.commands.append(command)
        if self.ssh_error:
            raise RuntimeError(_Result(255, "", self.ssh_error))
        if self.backend.sudo:
            return self.sudo_answer or _Result(0, "0\n")
        uid = "0" if self.user == "root" else "1000"
        return _Result(0, f"{self.user}\n{uid}\n")


def test_as_root_uses_sudo_only_for_a_login_that_is_not_root():
    from sparkfab.connection import as_root

    root = as_root(_Host("root"))
    assert not root.backend.sudo and root.commands == ["id -un; id -u"]
    user = as_root(_Host("ops"))
    assert user.backend.sudo and user.commands[-1] == "sudo -n /bin/sh -c 'id -u'"


@pytest.mark.parametrize(
    ("host", "error", "message"),
    [
        (
            _Host("ops", _Result(1, "", "sudo: a password is required\n")),
            "NoRoot",
            "ops cannot become root with sudo -n: sudo: a password is required",
        ),
        (
            _Host("ops", ssh_error="ssh: connect to host 10.0.0.1 port 22: No route to host\n"),
            "ConnectionError",
            "ssh: connect to host 10.0.0.1 port 22: No route to host",
        ),
    ],
)
def test_as_root_names_why_it_cannot(host, error, message):
    from sparkfab.connection import as_root

    with pytest.raises(Exception) as exc:
        as_root(host)
    assert (type(exc.value).__name__, str(exc.value)) == (error, message)


def _sudo_that_asks(tmp_path: Path, monkeypatch) -> None:
    """A login that is not root (`id` says ops/1000) and a sudo that wants ops's password on
    stdin (-S) and refuses -n, as a Spark owner's sudo does; then the command runs as root."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text(
        '#!/bin/sh\nif [ -n "$AS_ROOT" ]; then u=root; n=0; else u=ops; n=1000; fi\n'
        'case "$1" in -un) echo $u ;; -u) echo $n ;; esac\n'
    )
    (bin_dir / "sudo").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -n ]; then echo "sudo: a password is required" >&2; exit 1; fi\n'
        '[ "$1" = -S ] || exit 2\n'
        'read -r pw\n[ "$pw" = "s3cret" ] || { echo "Sorry, try again." >&2; exit 1; }\n'
        'shift 3\nexec env AS_ROOT=1 SUDO_USER=ops "$@"\n'
    )
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def _local(become) -> object:
    """A testinfra host of this machine, its own (get_host would hand out one cached host)."""
    import testinfra.backend
    import testinfra.host

    backend = testinfra.backend.get_backend("local://")
    th = testinfra.host.Host(backend)
    backend.set_host(th)
    th.sparkfab_become = become
    return th


def test_the_become_password_reaches_sudo_on_stdin_not_on_a_command_line(tmp_path, monkeypatch):
    from sparkfab.connection import Become, NoRoot, as_root

    _sudo_that_asks(tmp_path, monkeypatch)
    th = as_root(_local(Become("sudo", "s3cret")))
    assert th.run("id -u").stdout.strip() == "0" and th.run("echo $SUDO_USER").stdout.strip() == "ops"
    assert th.sparkfab_how == "sudo with the become password"
    sent = th.backend.get_command("id -u")
    assert "s3cret" not in sent and sent.startswith("sudo -S -p ''")
    with pytest.raises(NoRoot, match="ops cannot become root with sudo with the become password: Sorry, try again"):
        as_root(_local(Become("sudo", "wrong")))
    with pytest.raises(NoRoot, match="ops cannot become root with sudo -n: sudo: a password is required"):
        as_root(_local(Become()))
    with pytest.raises(NoRoot, match=r"with su \(ansible_become_method\): sparkfab.s checks use sudo only"):
        as_root(_local(Become("su", "s3cret")))


def test_each_hosts_become_comes_from_its_variables(tmp_path):
    from sparkfab.connection import Become, become_of
    from sparkfab.resolve import load_plan

    text = (REPO / "inventory/pair-1cable.yml").read_text()
    text = text.replace(
        "spark-b: {ansible_host: 10.0.0.22}",
        "spark-b: {ansible_host: 10.0.0.22, ansible_sudo_pass: pw-b, ansible_become_method: sudo}",
    )
    path = tmp_path / "pair.yml"
    path.write_text(text)
    assert become_of(load_plan(str(path))) == {"spark-a": Become("sudo", None), "spark-b": Become("sudo", "pw-b")}
