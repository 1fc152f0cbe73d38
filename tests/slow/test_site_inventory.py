"""A site inventory (groups, a host that is not a Spark, a vault, templates, the site's own
ansible.cfg and ~/.ssh/config) is read as Ansible reads it, and what sparkfab hands to Ansible
and to ssh is what Ansible and ssh themselves make of the site: each check asks the program."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers.site import NOT_A_SPARK, SECRET, ansible_tool, site

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "inventory/switch8-crs804-200.yml"
SPARKS = [f"spark-0{i}" for i in range(1, 9)]


@pytest.fixture
def where(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k not in ("HOME", "SPARKFAB_HOME")}
    env |= {"HOME": str(home), "SPARKFAB_STATE_DIR": str(tmp_path / "state")}
    return site(tmp_path / "site", EXAMPLE), env


def _run(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _sparkfab(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, env, str(Path(sys.executable).with_name("sparkfab")), *argv)


def _list_hosts(cwd: Path, env: dict[str, str], pattern: str, *inventory: str) -> list[str]:
    out = _run(cwd, env, ansible_tool("ansible"), *inventory, pattern, "--list-hosts")
    assert out.returncode == 0, out.stderr
    return sorted(line.strip() for line in out.stdout.splitlines()[1:] if line.strip())


def test_the_cluster_is_the_sites_spark_group_with_groups_and_connections_as_ansible_has_them(where):
    root, env = where
    # no INVENTORY: the site's ansible.cfg names it and its vault password file
    valid = _sparkfab(root, env, "validate")
    assert valid.returncode == 0, valid.stderr
    assert f"left alone: {NOT_A_SPARK}" in valid.stderr and "not in the cluster" in valid.stderr
    plan = json.loads(_sparkfab(root, env, "plan", "--format", "json").stdout)
    hosts = {h["name"]: h for h in plan["hosts"]}
    assert sorted(hosts) == _list_hosts(root, env, "sparks") == SPARKS
    assert plan["left_out"] == [NOT_A_SPARK]
    # groups as ansible-inventory has them
    listed = json.loads(_run(root, env, ansible_tool("ansible-inventory"), "--list").stdout)
    for name, h in hosts.items():
        theirs = sorted(
            g for g, v in listed.items() if name in (v.get("hosts") or []) and g not in ("all", "ungrouped")
        )
        theirs += ["sparks"] * ("sparks" not in theirs)  # a group of groups lists its children, not their hosts
        assert h["groups"] == sorted(theirs), name
    # the connection Ansible makes: the template filled, the key found from the site
    shown = _run(root, env, ansible_tool("ansible"), "sparks", "-m", "debug", "-a", "msg={{ ansible_user }}")
    assert shown.stdout.count('"msg": "nvidia"') == len(SPARKS), shown.stdout
    for h in hosts.values():
        assert h["ansible"]["ansible_user"] == "nvidia"
        assert h["ansible"]["ansible_ssh_private_key_file"] == str(root / "keys/spark_ed25519")
        assert "ansible_become_password" not in h["ansible"]  # plan never shows a secret


def test_the_rendered_tree_keeps_the_groups_opens_the_vault_and_leaves_the_other_host_out(where, collections):
    root, env = where
    out = _sparkfab(root, env, "render", "-o", "tree")
    assert out.returncode == 0, out.stderr
    written = [p for p in (root / "tree").rglob("*") if p.is_file()]
    assert written and not [p for p in written if SECRET in p.read_text()]  # no secret in clear
    rendered = ("-i", str(root / "tree/inventory.yml"))
    # Ansible opens the re-encrypted password with the site's vault password
    shown = _run(
        root, env, ansible_tool("ansible"), *rendered, "spark-03", "-m", "debug", "-a", "var=ansible_become_password"
    )
    assert f'"ansible_become_password": "{SECRET}"' in shown.stdout, shown.stdout + shown.stderr
    # the playbooks run on the Sparks only, and the site's groups select as in the site
    env_play = env | {"ANSIBLE_COLLECTIONS_PATH": str(collections)}
    play = _run(
        root, env_play, ansible_tool("ansible-playbook"), *rendered, str(REPO / "playbooks/site.yml"), "--list-hosts"
    )
    assert play.returncode == 0, play.stderr
    assert NOT_A_SPARK not in play.stdout and all(h in play.stdout for h in SPARKS)
    for pattern in ("rack1", "sparks:!spark-03", "gpu:&rack2", "sparks[0:1]"):
        site_hosts = set(_list_hosts(root, env, pattern))
        assert _list_hosts(root, env, pattern, *rendered) == sorted(site_hosts & set(SPARKS)), pattern


def test_every_verbs_limit_selects_in_the_site_what_ansible_selects(where, monkeypatch):
    from sparkfab.cluster.limits import files_here, selected
    from sparkfab.cluster.target import Target
    from sparkfab.render.tree import render
    from sparkfab.render.writer import write_tree

    root, env = where
    monkeypatch.chdir(root)
    for k in [k for k in os.environ if k.startswith("ANSIBLE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("SPARKFAB_STATE_DIR", env["SPARKFAB_STATE_DIR"])
    (root / "retry").write_text("spark-06\nprom1\n")
    target = Target.load("inventory")
    write_tree(render(target.plan), root / "tree")
    for limit in (
        "sparks",
        "rack2",
        "sparks:!spark-03",
        "rack1[0:1]",
        "all:!monitoring",
        "gpu:&~spark-0[15]",
        "@retry",
    ):
        want = sorted(set(_list_hosts(root, env, "all", "--limit", limit)) - {NOT_A_SPARK})
        assert want, limit
        assert sorted(selected(target.plan, root / "tree", files_here(limit))) == want, limit  # apply, serve, reset
        assert sorted(target.limited(limit) or []) == want, limit  # verify, preflight


def test_a_run_reads_the_sites_ansible_cfg_merged_with_what_the_playbooks_need(where, collections):
    from sparkfab.push.env import config_env

    root, env = where
    merged = config_env(REPO / "ansible.cfg", collections, env, root)
    assert merged["ANSIBLE_CONFIG"] == str(root / "ansible.cfg")
    dump = _run(root, env | merged, ansible_tool("ansible-config"), "dump", "--format", "json")
    settings = {s["name"]: s["value"] for s in json.loads(dump.stdout) if "name" in s}
    assert settings["DEFAULT_REMOTE_USER"] == "fallback"  # the site's
    assert settings["DEFAULT_VAULT_PASSWORD_FILE"] == str(root / "vault-pass")  # the site's
    assert settings["COLLECTIONS_PATHS"][0] == str(collections)  # sparkfab's collection first
    assert settings["COLLECTIONS_PATHS"][1:] == [str(root / "site-collections")]  # then the site's
    assert settings["TASK_TIMEOUT"] == 600  # sparkfab's bound, the site sets none
    dump = _run(root, env | merged, ansible_tool("ansible-config"), "dump", "-t", "connection", "--format", "json")
    ssh = next(p["ssh"] for p in json.loads(dump.stdout) if "ssh" in p)
    ssh_args = next(s["value"] for s in ssh if s["name"] == "ssh_args")
    assert ssh_args.index("ServerAliveInterval=5") < ssh_args.index("Compression=yes")  # ours first, theirs kept


def test_sparkfabs_own_ssh_reaches_a_host_as_ansibles_ssh_does(where, monkeypatch):
    from sparkfab import connection
    from sparkfab.resolve import load_plan

    root, env = where
    (Path(env["HOME"]) / ".ssh/config").write_text(
        "Host 10.0.1.1*\n  Port 2222\n  User from-ssh-config\n  Compression yes\n"
    )
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.chdir(root)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(root / "vault-pass"))
    plan = load_plan("inventory")
    conn = connection.for_plan(plan, root / "state")
    alias = conn.alias["spark-03"]
    seen = _run(root, env, "ssh", "-G", "-F", conn.ssh_config, alias).stdout
    options = dict(line.split(" ", 1) for line in seen.splitlines() if " " in line)
    assert options["hostname"] == "10.0.1.13"
    assert options["user"] == "nvidia"  # Ansible's variable first, as on Ansible's command line
    assert options["port"] == "2222" and options["compression"] == "yes"  # then the user's own config
    assert re.search(r"spark_ed25519$", options["identityfile"])
    # the become password of the vault, opened by Ansible in a child for sudo's stdin
    assert conn.become["spark-03"] == connection.Become("sudo", SECRET)


def test_a_vault_without_its_password_is_named_with_where_to_give_it(where):
    """Ansible says no more than that a password is needed: the message names where to give it,
    and points at no warnings that were never printed."""
    root, env = where
    cfg = root / "ansible.cfg"
    cfg.write_text("".join(ln for ln in cfg.read_text().splitlines(True) if "vault_password_file" not in ln))
    res = _sparkfab(root, env, "validate")
    assert res.returncode == 2, res.stderr
    assert "A vault password must be specified" in res.stderr and "ANSIBLE_VAULT_PASSWORD_FILE" in res.stderr
    assert "warnings above" not in res.stderr
