"""Reading an inventory runs no code of the user's: a connection variable is filled from other
variables only (as a play would fill it), never by a lookup while validate, plan or render read it;
a secret that needs one is left for Ansible to fill when it runs the play."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkfab.errors import InventoryError
from sparkfab.inventory.ansible_child import fill_variables
from sparkfab.resolve import load_plan
from tests.conftest import REPO


def _site(tmp_path: Path, extra: str) -> Path:
    """The ring4 site inventory with `extra` in spark-329f's host_vars (above hosts.ini's own)."""
    d = tmp_path / "site"
    shutil.copytree(REPO / "tests/data/split/ring4-ini", d)
    (d / "host_vars/spark-329f.yml").write_text(extra)
    return d / "hosts.ini"


@pytest.mark.parametrize("key", ["ansible_host", "ansible_user"])
def test_a_lookup_in_a_connection_variable_is_refused_and_never_run(tmp_path, key):
    marker = tmp_path / "PWNED"
    hosts = _site(tmp_path, f"{key}: \"{{{{ lookup('pipe', 'touch {marker}') }}}}\"\n")
    with pytest.raises(InventoryError) as exc:
        load_plan(str(hosts))
    assert not marker.exists()
    assert f"{key}: cannot be templated: needs more than variables" in str(exc.value)


def test_a_secret_that_needs_a_lookup_is_left_for_ansible(tmp_path, cli):
    marker = tmp_path / "PWNED"
    hosts = _site(tmp_path, f"ansible_become_password: \"{{{{ lookup('pipe', 'touch {marker}') }}}}\"\n")
    res = cli("validate", str(hosts))
    assert res.code == 0 and not marker.exists(), res.err
    assert "note: ansible_become_password of spark-329f needs more than variables" in res.err
    out = tmp_path / "out"
    assert cli("render", str(hosts), "-o", str(out)).code == 0 and not marker.exists()
    # handed to Ansible as written, for the play to fill when it runs
    assert "lookup(''pipe''" in (out / "inventory.yml").read_text()


def test_variables_fill_variables_and_nothing_else():
    v = {"user": "ops", "login": "{{ user }}", "deep": "{{ login }}-x", "loop": "{{ loop }}"}
    assert fill_variables("{{ deep }}@{{user}}", v) == "ops-x@ops"
    for asked in ("{{ user | upper }}", "{{ lookup('env', 'HOME') }}", "{% if 1 %}x{% endif %}", "{{ nope }}"):
        assert fill_variables(asked, v) is None, asked
    assert fill_variables("{{ loop }}", v) is None
