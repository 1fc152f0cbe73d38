"""The collection sparkfab.fabric as Ansible's own tools take it: built by `sparkfab collection`
(ansible-galaxy's build), installed into an empty collections path from the tarball and from a
requirements.yml, every module and role read by ansible-doc, the installed collection through
ansible-lint's production profile and ansible-test's sanity tests. (Its roles serving a site's
own playbook on a lab Spark: tests/lab/test_lab_converge.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfab import __version__
from sparkfab.push import collection
from tests.conftest import REPO

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _run(*argv: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{argv}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The tarball `sparkfab collection` builds, installed into an empty collections path by
    `ansible-galaxy collection install`, with a home of its own (ansible-lint and ansible-test
    keep caches there)."""
    root = tmp_path_factory.mktemp("collection")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env |= {"HOME": str(root / "home"), "PATH": f"{BIN}:{env['PATH']}", "ANSIBLE_NOCOLOR": "1"}
    built = _run(str(BIN / "sparkfab"), "collection", "-o", str(root / "dist"), env=env, cwd=root)
    tarball = Path(built.stdout.strip())
    assert tarball == root / "dist" / f"sparkfab-fabric-{__version__}.tar.gz" and tarball.is_file()
    path = root / "collections"
    _run(str(BIN / "ansible-galaxy"), "collection", "install", "-p", str(path), str(tarball), env=env, cwd=root)
    return path, env | {"ANSIBLE_COLLECTIONS_PATH": str(path)}


def test_a_requirements_file_installs_it_as_a_site_names_it(installed, tmp_path):
    path, env = installed
    env = {k: v for k, v in env.items() if k != "ANSIBLE_COLLECTIONS_PATH"}  # a site without it yet
    tarball = next((path.parent / "dist").glob("*.tar.gz"))
    (tmp_path / "requirements.yml").write_text(f"collections:\n  - name: {tarball}\n    type: file\n")
    empty = tmp_path / "collections"
    galaxy = str(BIN / "ansible-galaxy")
    _run(galaxy, "collection", "install", "-r", "requirements.yml", "-p", str(empty), env=env, cwd=tmp_path)
    listed = _run(galaxy, "collection", "list", "-p", str(empty), "--format", "json", env=env, cwd=tmp_path)
    mine = json.loads(listed.stdout)[str(empty.resolve() / "ansible_collections")]  # Ansible's own are listed too
    assert {name: v["version"] for name, v in mine.items()} == {collection.FQCN: __version__}


def test_ansible_doc_reads_every_module_and_role_by_its_fully_qualified_name(installed):
    path, env = installed
    home = collection.home(path)
    modules = sorted(p.stem for p in (home / "plugins/modules").glob("*.py"))
    # the roles' modules and the documentation of the playbooks' two actions
    assert modules == sorted(
        [p.stem for p in REPO.glob("roles/*/library/*.py")] + [p.stem for p in REPO.glob("playbooks/library/*.py")]
    )
    names = [f"{collection.FQCN}.{m}" for m in modules]
    doc = _run(str(BIN / "ansible-doc"), "--json", *names, env=env, cwd=path)
    assert sorted(json.loads(doc.stdout)) == names
    listed = _run(str(BIN / "ansible-doc"), "--list", "--json", collection.FQCN, env=env, cwd=path)
    assert sorted(json.loads(listed.stdout)) == names
    roles = sorted(p.name for p in (REPO / "roles").iterdir() if p.is_dir())
    role_doc = _run(
        str(BIN / "ansible-doc"), "-t", "role", "--json", *[f"{collection.FQCN}.{r}" for r in roles], env=env, cwd=path
    )
    assert sorted(json.loads(role_doc.stdout)) == [f"{collection.FQCN}.{r}" for r in roles]


def test_the_installed_collection_passes_ansible_lints_production_profile(installed):
    path, env = installed
    lint = subprocess.run(
        [str(BIN / "ansible-lint"), "--nocolor", "--offline", "--profile", "production"],
        cwd=collection.home(path),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]
    assert "Profile 'production' was required, and it passed" in lint.stderr, lint.stderr[-2000:]


def test_the_collection_passes_ansible_tests_sanity_tests(installed, tmp_path):
    """Every sanity test of the running ansible-core (validate-modules, ansible-doc, pylint,
    compile, import, yamllint, ...), each in the virtual environment ansible-test makes for it.
    Its pip bootstrap comes from a host this machine cannot reach: `tests/helpers/get_pip.py`
    stands in for it (the interpreter's ensurepip, then the named packages from PyPI)."""
    path, env = installed
    cache = Path(env["HOME"]) / ".ansible/test/cache"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "tests/helpers/get_pip.py", cache / f"get_pip_{_pip_version().replace('.', '_')}.py")
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    res = subprocess.run(
        [str(BIN / "ansible-test"), "sanity", "--python", py, "--color", "no"],
        cwd=collection.home(path),
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert 'Running sanity test "validate-modules"' in res.stdout + res.stderr


def _pip_version() -> str:
    """The pip version ansible-test bootstraps its environments with (the name of the script it
    looks for in its cache); ansible-test keeps it in a private module, so it is read from there."""
    import ansible_test

    source = (Path(ansible_test.__file__).parent / "_internal/python_requirements.py").read_text()
    found = re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", source)
    assert found, "ansible-test no longer says which pip it bootstraps where this test reads it"
    return found.group(1)


def test_the_tarball_replaces_only_a_tarball_of_the_collection(installed, tmp_path):
    """Outputs never replace what sparkfab did not write: a file of the tarball's name that is not
    this collection's stays as it was and the build is refused; its own is replaced; a symbolic
    link as the folder is refused."""
    _, env = installed
    sparkfab = str(BIN / "sparkfab")
    name = f"sparkfab-fabric-{__version__}.tar.gz"
    first = subprocess.run(
        [sparkfab, "collection", "-o", "dist"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert first.returncode == 0 and first.stdout.strip() == f"dist/{name}", first.stderr
    assert collection.is_ours(tmp_path / "dist" / name)
    again = subprocess.run(
        [sparkfab, "collection", "-o", "dist"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / name).write_text("a site's own file\n")
    refused = subprocess.run(
        [sparkfab, "collection", "-o", "other"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "exists and sparkfab did not write it" in refused.stderr, refused.stderr
    assert (tmp_path / "other" / name).read_text() == "a site's own file\n"
    (tmp_path / "link").symlink_to(tmp_path / "dist")
    linked = subprocess.run(
        [sparkfab, "collection", "-o", "link"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert linked.returncode == 2 and "symbolic link" in linked.stderr, linked.stderr
