"""sparkfab -v and Ansible's own output: a real run on localhost (two ansible-playbook runs)."""

from __future__ import annotations

import pytest

from sparkfab.push.run import run_playbook
from tests.conftest import REPO
from tests.helpers.inventories import localhost

pytestmark = pytest.mark.slow


def test_verbosity_shows_ansibles_own_output_at_its_level(tmp_path, capfd):
    """sparkfab -v: Ansible's output at -v (a task's result); quiet otherwise."""
    inventory = localhost(tmp_path)
    kw = {"hosts": ["local"], "workdir": tmp_path / "state"}
    playbook = str(REPO / "tests/data/playbooks/echo-probe.yml")
    assert run_playbook(playbook, inventory, "probe", **kw).rc == 0
    assert "TASK [" not in capfd.readouterr().out
    assert run_playbook(playbook, inventory, "probe", verbosity=1, **kw).rc == 0
    out = capfd.readouterr().out
    assert "TASK [Probe | Say something]" in out and '"stdout": "probe-says-hello"' in out
