"""Every module of the roles reads as Ansible's own do: `ansible-doc` renders it, and its
EXAMPLES are tasks whose arguments are options its DOCUMENTATION names (what `ansible-doc
--json` says, not our reading of the file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

MODULES = sorted(REPO.glob("roles/*/library/*.py"))


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_ansible_doc_renders_the_module_and_its_examples_use_its_options(module: Path):
    doc = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-doc")), "--json", "-M", str(module.parent), module.stem],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert doc.returncode == 0 and not doc.stderr.strip(), doc.stderr
    entry = json.loads(doc.stdout)[module.stem]
    options = set(entry["doc"]["options"])
    examples = yaml.safe_load(entry["examples"] or "[]")
    assert examples, f"{module.stem} has no EXAMPLES"
    calls = [task[module.stem] for task in examples if module.stem in task]
    assert calls, f"no example of {module.stem} calls it"
    for args in calls:
        assert set(args) <= options, (module.stem, set(args) - options)
    assert entry["return"], f"{module.stem} has no RETURN"
