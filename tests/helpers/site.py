"""A site inventory as Ansible users keep one: an inventory directory with INI and YAML groups, a
host that is not a Spark, the sparkfab block in the Sparks' group_vars, an encrypted
`group_vars/all/vault.yml` holding the become password, a templated `ansible_user`, a key path
relative to the site, and the site's own ansible.cfg naming the inventory and the vault password
file. Built from one of the examples (its hosts, addresses and sparkfab block)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

#: the become password the vault holds (never to be found in clear in anything sparkfab writes)
SECRET = "s3cret-become-pw"
NOT_A_SPARK = "prom1"


def ansible_tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def site(root: Path, example: Path) -> Path:
    """The site directory (run the tools from it: its ansible.cfg names the inventory)."""
    data = yaml.safe_load(example.read_text())["all"]
    hosts = {name: (hv or {}).get("ansible_host", name) for name, hv in data["hosts"].items()}
    names = sorted(hosts)
    half = len(names) // 2
    inv = root / "inventory"
    (inv / "group_vars/sparks").mkdir(parents=True)
    (inv / "group_vars/all").mkdir(parents=True)
    (root / "keys").mkdir()
    (root / "keys/spark_ed25519").write_text("not a real key\n")
    ini = ["# the site: two racks of Sparks and a monitoring host", "[rack1]"]
    ini += [f"{h} ansible_host={hosts[h]}" for h in names[:half]]
    ini += ["", "[rack2]", *[f"{h} ansible_host={hosts[h]}" for h in names[half:]]]
    ini += ["", "[sparks:children]", "rack1", "rack2", "", "[monitoring]", f"{NOT_A_SPARK} ansible_host=10.255.0.50"]
    (inv / "hosts.ini").write_text("\n".join(ini) + "\n")
    (inv / "gpu.yml").write_text(yaml.safe_dump({"gpu": {"hosts": {h: None for h in names}}}))
    (inv / "group_vars/sparks/login.yml").write_text(
        "spark_user: nvidia\n"
        'ansible_user: "{{ spark_user }}"\n'
        "ansible_ssh_private_key_file: keys/spark_ed25519\n"
        'ansible_become_password: "{{ vault_become_pass }}"\n'
    )
    block = {**data["vars"]["sparkfab"], "group": "sparks"}
    (inv / "group_vars/sparks/sparkfab.yml").write_text(yaml.safe_dump({"sparkfab": block}, sort_keys=False))
    (root / "vault-pass").write_text("site-vault-password\n")
    vault = inv / "group_vars/all/vault.yml"
    vault.write_text(f"vault_become_pass: {SECRET}\n")
    subprocess.run(
        [ansible_tool("ansible-vault"), "encrypt", "--vault-password-file", str(root / "vault-pass"), str(vault)],
        check=True,
        capture_output=True,
    )
    (root / "site-collections").mkdir()  # the site's own collections (a run puts sparkfab's first)
    (root / "ansible.cfg").write_text(
        "[defaults]\ninventory = inventory\nvault_password_file = vault-pass\nremote_user = fallback\n"
        "collections_path = site-collections\n"
        "[ssh_connection]\nssh_args = -o Compression=yes\n"
    )
    return root
