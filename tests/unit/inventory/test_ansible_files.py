"""Every file Ansible opens while sparkfab reads an inventory through it is checked first: its
configuration (the working directory's or ANSIBLE_CONFIG's) and the vault password file, each a
regular file of bounded size, UTF-8; refused at once with its name, never a hang or a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _validate(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "ANSIBLE_CONFIG"} | (env or {})
    argv = [sys.executable, "-m", "sparkfab", "validate", "hosts.ini", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, env=full)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    d = tmp_path / "site"
    shutil.copytree(REPO / "tests/data/split/ring4-ini", d)
    return d


@pytest.mark.parametrize("where", ["cwd", "ANSIBLE_CONFIG"])
def test_a_fifo_as_ansible_cfg_is_refused_at_once(site, where):
    cfg = site / ("ansible.cfg" if where == "cwd" else "cfg/ansible.cfg")
    cfg.parent.mkdir(exist_ok=True)
    os.mkfifo(cfg)
    res = _validate(site, env={"ANSIBLE_CONFIG": str(cfg)} if where != "cwd" else None)
    assert res.returncode == 2 and f"{cfg}: Ansible's configuration is not a regular file" in res.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_vault_password_file_that_is_no_file_is_refused_by_name(site, kind):
    pw = site / "pw"
    if kind == "fifo":
        os.mkfifo(pw)
    target = str(pw) if kind == "fifo" else "/dev/zero"
    res = _validate(site, "--vault-password-file", target)
    assert res.returncode == 2 and f"{target}: is not a regular file" in res.stderr
    assert "vault password file" in res.stderr and "Traceback" not in res.stderr


def test_an_ansible_cfg_that_is_not_utf8_is_named(site):
    (site / "ansible.cfg").write_bytes(b"[defaults]\ninventory = hosts.ini\nremote_user = caf\xe9\n")
    res = subprocess.run(
        [sys.executable, "-m", "sparkfab", "validate"], cwd=site, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2 and "ansible.cfg: Ansible's configuration is not UTF-8 text" in res.stderr
    assert "internal error" not in res.stderr


@pytest.mark.parametrize("depth", [201, 500, 990, 1500])
def test_yaml_nested_past_the_bound_is_refused_not_a_recursion_error(tmp_path, cli, depth):
    """The builder bounds nesting itself (200), below libyaml's 1,000 and Python's stack."""
    text = (REPO / "inventory/pair-1cable.yml").read_text()
    deep = "[" * depth + "]" * depth
    inv = tmp_path / "deep.yml"
    inv.write_text(
        text.replace("spark-a: {ansible_host: 10.0.0.21}", f"spark-a: {{ansible_host: 10.0.0.21, x: {deep}}}")
    )
    res = cli("validate", str(inv))
    assert res.code == 2 and "internal error" not in res.err, res.err
    assert "nests more than 200 collections deep" in res.err or "depth" in res.err.lower()
