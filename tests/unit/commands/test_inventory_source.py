"""Which inventory a verb reads: INVENTORY or -i, else ANSIBLE_INVENTORY, else ansible.cfg's
`inventory`, as Ansible's own tools find it; one source."""

from __future__ import annotations

import argparse

import pytest

from sparkfab.commands.common import add_inventory, inventory_source
from sparkfab.errors import UsageError


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_inventory(p)
    return p.parse_args(list(argv))


def test_the_argument_or_dash_i(tmp_path):
    assert inventory_source(_args("inv.yml"), {}, tmp_path) == "inv.yml"
    assert inventory_source(_args("-i", "site/"), {"ANSIBLE_INVENTORY": "other"}, tmp_path) == "site/"


def test_ansible_inventory_then_ansible_cfg(tmp_path, monkeypatch):
    assert inventory_source(_args(), {"ANSIBLE_INVENTORY": "a.ini"}, tmp_path) == "a.ini"
    (tmp_path / "ansible.cfg").write_text("[defaults]\ninventory = ./inventory\n")
    home = tmp_path / "home"
    home.mkdir()
    assert inventory_source(_args(), {"HOME": str(home)}, tmp_path) == str(tmp_path / "inventory")
    cfg = tmp_path / "elsewhere.cfg"
    cfg.write_text("[defaults]\ninventory = hosts.ini\n")
    assert inventory_source(_args(), {"HOME": str(home), "ANSIBLE_CONFIG": str(cfg)}, tmp_path) == str(
        tmp_path / "hosts.ini"
    )


def test_one_source_and_not_none(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(UsageError, match="one inventory source, here are 2"):
        inventory_source(_args("-i", "a", "-i", "b"), {}, tmp_path)
    with pytest.raises(UsageError, match="one inventory source"):
        inventory_source(_args(), {"ANSIBLE_INVENTORY": "a,b"}, tmp_path)
    with pytest.raises(UsageError, match="an inventory is needed"):
        inventory_source(_args(), {"HOME": str(home)}, tmp_path)


def test_every_verb_takes_dash_i(cli):
    assert cli("validate", "-q", "-i", "inventory/ring4.yml").code == 0
    assert cli("plan", "--format", "json", "--inventory", "inventory/pair-1cable.yml").code == 0
    missing = cli("validate")
    assert missing.code == 2 and "an inventory is needed" in missing.err
