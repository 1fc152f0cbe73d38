"""The task names the verbs read a run's results by (sparkfab.push.tasks) are the names of tasks in
the roles and playbooks: each starts at least one task's name, and every task of serving and of
the files role carries the prefix its verb reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from sparkfab.push import tasks
from tests.conftest import REPO


def _tasks(node: Any) -> Iterator[str]:
    """Every task name in a tasks or playbook file, inside blocks and plays' task lists too."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if isinstance(node.get("name"), str) and not {
            "hosts",
            "import_playbook",
            "ansible.builtin.import_playbook",
        } & set(node):
            yield node["name"]
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from _tasks(node.get(key))


def _names(*patterns: str) -> list[str]:
    files = sorted({p for pattern in patterns for p in REPO.glob(pattern)})
    return [name for f in files for name in _tasks(yaml.safe_load(f.read_text()))]


ALL = _names("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml")


@pytest.mark.parametrize("name", tasks.READ_BY_VERBS)
def test_each_name_a_verb_reads_starts_a_task_of_the_content(name: str):
    assert [t for t in ALL if t.startswith(name)], f"no task of the roles or playbooks starts with {name!r}"


def test_the_tasks_of_serving_and_of_the_files_role_carry_their_prefix():
    for role, prefix in (("sparkfab_serve", tasks.SERVE), ("sparkfab_files", tasks.FILES)):
        names = _names(f"roles/{role}/tasks/*.yml")
        assert names and all(n.startswith(prefix) for n in names), (role, names)


def test_the_start_and_stop_the_verbs_count_are_the_roles_own():
    starts = [n for n in _names("roles/sparkfab_serve/tasks/start.yml") if n.startswith(tasks.SERVE_START)]
    stops = [n for n in _names("roles/sparkfab_serve/tasks/stop.yml") if n.startswith(tasks.SERVE_STOP)]
    assert len(starts) == 2 and len(stops) == 2, (starts, stops)  # a process and a container each
