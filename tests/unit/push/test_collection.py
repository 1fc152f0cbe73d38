"""sparkfab.push.collection: where each file of the checkout goes in the collection sparkfab.fabric,
and the copy sparkfab's own runs use, written again only when the content changed."""

from __future__ import annotations

import shutil

import pytest

from sparkfab.push import collection
from tests.conftest import REPO


def test_each_module_goes_to_the_collections_plugins_and_each_role_goes_whole_without_them():
    files = collection.sources(REPO)
    modules = {p.stem for p in REPO.glob("roles/*/library/*.py")} | {
        p.stem for p in REPO.glob("playbooks/library/*.py")
    }
    assert {k.split("/")[-1].removesuffix(".py") for k in files if k.startswith("plugins/modules/")} == modules
    assert not [k for k in files if "/library/" in k or "__pycache__" in k]
    roles = {p.name for p in (REPO / "roles").iterdir() if p.is_dir()}
    assert {k.split("/")[1] for k in files if k.startswith("roles/")} == roles
    assert (
        files["plugins/action/sparkfab_fabric_check.py"] == REPO / "playbooks/action_plugins/sparkfab_fabric_check.py"
    )
    assert files["playbooks/site.yml"] == REPO / "playbooks/site.yml"


def test_two_roles_with_a_module_of_one_name_are_refused(tmp_path):
    root = tmp_path / "content"
    shutil.copytree(REPO / "roles", root / "roles", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "playbooks", root / "playbooks", ignore=shutil.ignore_patterns("__pycache__"))
    twin = root / "roles/sparkfab_serve/library"
    twin.mkdir(exist_ok=True)  # sparkfab_serve has a module of its own (sparkfab_warm)
    shutil.copy(root / "roles/sparkfab_reset/library/sparkfab_reset.py", twin)
    with pytest.raises(ValueError, match=r"would both be plugins/modules/sparkfab_reset\.py"):
        collection.sources(root)


def test_a_runs_copy_is_written_again_only_when_the_content_changed(tmp_path):
    root = tmp_path / "content"
    shutil.copytree(REPO / "roles", root / "roles", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "playbooks", root / "playbooks", ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "state"
    path = collection.for_runs(work, root)
    site = collection.home(path) / "playbooks/site.yml"
    first = site.stat().st_ino
    assert collection.for_runs(work, root) == path and site.stat().st_ino == first  # unchanged: kept
    task = root / "roles/sparkfab_files/tasks/main.yml"
    task.write_text(task.read_text() + "# edited\n")
    collection.for_runs(work, root)
    assert (collection.home(path) / "roles/sparkfab_files/tasks/main.yml").read_text().endswith("# edited\n")
    # no half-written copy left beside it
    assert sorted(p.name for p in path.iterdir()) == ["ansible_collections", "content"]
    galaxy = (collection.home(path) / "galaxy.yml").read_text()
    assert "namespace: sparkfab\nname: fabric\n" in galaxy
