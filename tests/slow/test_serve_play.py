"""serve.yml under real Ansible: a rank that does not answer stops its instance's start."""

from __future__ import annotations

import pytest

from sparkfab.push.run import run_playbook
from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_an_instance_with_a_rank_that_does_not_answer_is_not_started(tmp_path):
    """Rank 1 cannot be reached (nothing listens on its ssh port): rank 0, which answers, fails
    at once at the check of its instance's ranks, naming the silent one, and nothing is
    started on it (no start task ran, so no launch file was looked for)."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        "all:\n"
        "  vars: {sparkfab_instance: glm, sparkfab_runtime: process, sparkfab_health_url: null,"
        " sparkfab_start_first: false, ansible_python_interpreter: python3}\n"
        "  hosts:\n"
        "    rank0: {ansible_connection: local, sparkfab_rank: 0}\n"
        "    rank1: {ansible_host: 127.0.0.1, ansible_port: 9, sparkfab_rank: 1}\n"
    )
    playbook = str(REPO / "playbooks/serve.yml")
    result = run_playbook(playbook, inventory, "serve", hosts=["rank0", "rank1"], workdir=tmp_path / "state")
    assert result.rc != 0
    rank0, rank1 = result.hosts["rank0"], result.hosts["rank1"]
    assert rank1.state == "unreachable"
    assert rank0.failed_task == "Serve | Every rank of the instance answers", rank0
    assert "glm needs every rank, and rank1 did not answer" in rank0.message
    assert not any(t.startswith("Serve | Start") for t in rank0.changed_tasks)
