"""Every module of the roles (and the documentation of every action) reads as Ansible's own
do: `ansible-doc` renders it, and its EXAMPLES are tasks that call it by its name in the
collection with options its DOCUMENTATION names (what `ansible-doc --json` says, not our
reading of the file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparkfab import others
from tests.conftest import REPO

#: the roles' modules and the documentation of the playbooks' actions
MODULES = sorted([*REPO.glob("roles/*/library/*.py"), *REPO.glob("playbooks/library/*.py")])


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_ansible_doc_renders_the_module_and_its_examples_use_its_options(module: Path):
    doc = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-doc")), "--json", "-M", str(module.parent), module.stem],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # nothing of Ansible's about the module (another package's Python warning is not ours)
    assert doc.returncode == 0 and not "".join(others.own_lines(doc.stderr)).strip(), doc.stderr
    entry = json.loads(doc.stdout)[module.stem]
    options = set(entry["doc"]["options"])
    examples = yaml.safe_load(entry["examples"] or "[]")
    assert examples, f"{module.stem} has no EXAMPLES"
    fqcn = f"sparkfab.fabric.{module.stem}"  # as a site calls it from the collection
    calls = [task[fqcn] for task in examples if fqcn in task]
    assert calls, f"no example of {module.stem} calls it as {fqcn}"
    for args in calls:
        assert set(args) <= options, (module.stem, set(args) - options)
    assert entry["return"], f"{module.stem} has no RETURN"
