"""sparkfab's Ansible content as the collection `sparkfab.fabric`.

One source, laid out twice. The checkout keeps the content where the house layout puts it: the
roles in `roles/` (each role's modules in its `library/`), the playbooks in `playbooks/` with their
action and filter plugins beside them. `LAYOUT` says where each part goes in a collection, and
`assemble` writes that collection:

- for sparkfab's own runs, into the cluster's state (`for_runs`), written again only when the
  content changed, and put first on the run's collections path: the playbooks and roles name each
  other, the modules and the plugins by their fully qualified names (`sparkfab.fabric.sparkfab_files`);
- for a site, as the tarball `ansible-galaxy collection build` makes of it (`build`, the verb
  `sparkfab collection`), installed with `ansible-galaxy collection install` or a
  `requirements.yml`, so that a site's own playbook imports a role of it against the inventory
  `sparkfab render` writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from sparkfab import __version__
from sparkfab.errors import UsageError
from sparkfab.files.outputs import check_file, plain_target, write_file
from sparkfab.files.yamlload import dump
from sparkfab.paths import repo_dir

NAMESPACE = "sparkfab"
NAME = "fabric"
FQCN = f"{NAMESPACE}.{NAME}"

#: where each file of the collection comes from: (its folder in the collection, a pattern under the
#: content's root). A role's own folder goes whole to `roles/`, less its `library/`: a collection's
#: roles carry no plugins, its modules live in `plugins/modules/` for every role of it.
LAYOUT = (
    ("plugins/modules", "roles/*/library/*.py"),
    ("plugins/modules", "playbooks/library/*.py"),  # the actions' documentation
    ("plugins/module_utils", "playbooks/module_utils/*.py"),  # what the modules share
    ("plugins/action", "playbooks/action_plugins/*.py"),
    ("plugins/filter", "playbooks/filter_plugins/*.py"),
    ("playbooks", "playbooks/*.yml"),
)
#: what a role's folder holds that the collection does not
_NOT_IN_ROLES = ("library", "__pycache__")

#: the ansible-core releases whose `ansible-test sanity` reads the collection's ignore file
SANITY_RELEASES = ("2.17", "2.18", "2.19", "2.20", "2.21")
#: what ansible-test's sanity tests hold against the collection that it does not follow, with why
SANITY_IGNORES = {
    # sparkfab is Apache-2.0 (LICENSE); the GPLv3 header is ansible-core's own licence
    "validate-modules:missing-gplv3-license": "plugins/modules/*.py",
}

#: the oldest ansible-core the content runs on (pyproject.toml's floor)
REQUIRES_ANSIBLE = ">=2.17.0"

README = f"""# {FQCN}

The Ansible content of sparkfab, which brings up clusters of NVIDIA DGX Spark systems that serve
one model with tensor parallelism across them (`sparkfab collection` builds this tarball).

sparkfab renders every host's files on the controller (`sparkfab render INVENTORY -o TREE`);
the roles here install them. The inventory they run against is the one `render` writes
(`TREE/inventory.yml`): its host variables carry each host's bundle.

- Roles: `{FQCN}.sparkfab_netplan` (the fabric's netplan), `{FQCN}.sparkfab_files` (NCCL
  environment, control plane, launch files, LLDP settings, exporter), `{FQCN}.sparkfab_serve`
  (start, stop and health of the engine), `{FQCN}.sparkfab_exporter`, `{FQCN}.sparkfab_reset`.
- Modules: `{FQCN}.sparkfab_install`, `{FQCN}.sparkfab_netplan`, `{FQCN}.sparkfab_reset`, and
  the controller-side actions `{FQCN}.sparkfab_preflight` and `{FQCN}.sparkfab_fabric_check`
  (`ansible-doc {FQCN}.sparkfab_install`).
- Playbooks: `{FQCN}.site` (what `sparkfab apply` runs), `{FQCN}.linkspeed`, `{FQCN}.serve`,
  `{FQCN}.reset`, `{FQCN}.exporter`, `{FQCN}.peer_ssh`.

```yaml
# a site's own playbook
- name: The fabric's NCCL environment and launch files
  hosts: all
  become: true
  tasks:
    - name: Install the files sparkfab rendered
      ansible.builtin.import_role:
        name: {FQCN}.sparkfab_files
```
"""


def galaxy() -> dict[str, object]:
    """The collection's galaxy.yml."""
    return {
        "namespace": NAMESPACE,
        "name": NAME,
        "version": __version__,
        "readme": "README.md",
        "authors": ["sparkfab"],
        "description": "Install the fabric files sparkfab renders for DGX Spark clusters; serve, flip, reset",
        "license": ["Apache-2.0"],
        "tags": ["nccl", "netplan", "rdma", "vllm", "infrastructure"],
        "dependencies": {},
        "build_ignore": ["*.tar.gz", ".ansible-lint"],
    }


def sources(root: Path | None = None) -> dict[str, Path]:
    """Every file of the collection (its path in the collection) and where it comes from."""
    root = root or repo_dir("roles").parent
    out: dict[str, Path] = {}
    for role in sorted(p for p in (root / "roles").iterdir() if p.is_dir()):
        for f in sorted(role.rglob("*")):
            rel = f.relative_to(role)
            if f.is_file() and rel.parts[0] not in _NOT_IN_ROLES and "__pycache__" not in rel.parts:
                out[f"roles/{role.name}/{rel.as_posix()}"] = f
    for folder, pattern in LAYOUT:
        for f in sorted(root.glob(pattern)):
            key = f"{folder}/{f.name}"
            if key in out:  # two roles with a module of one name: the collection would keep one
                raise ValueError(f"{f} and {out[key]} would both be {key} in {FQCN}")
            out[key] = f
    return out


CHANGELOG = f"""# Changelog of {FQCN}

## {__version__}

The first release as a collection: the roles, modules, plugins and playbooks that `sparkfab apply`,
`serve`, `linkspeed`, `exporter`, `peer-ssh` and `reset` run, named by their fully qualified names.
"""

#: ansible-lint's settings for the collection: what its production profile asks that this
#: collection cannot give, each with the reason
LINT = {
    "profile": "production",
    # sparkfab has no public repository to name yet; galaxy.yml leaves the key out rather than
    # naming one that does not exist
    "skip_list": ["galaxy[no-repository]"],
}


def _sanity_ignores(files: dict[str, Path]) -> str:
    lines = []
    for test, pattern in SANITY_IGNORES.items():
        for rel in files:
            if Path(rel).match(pattern):
                lines.append(f"{rel} {test}\n")
    return "".join(lines)


def _generated(files: dict[str, Path]) -> dict[str, str]:
    """The collection's own files, made for the sources `files` (the sanity ignores name them)."""
    ignores = _sanity_ignores(files)
    return {
        **{f"tests/sanity/ignore-{release}.txt": ignores for release in SANITY_RELEASES},
        "galaxy.yml": dump(galaxy()),
        "meta/runtime.yml": dump({"requires_ansible": REQUIRES_ANSIBLE}),
        "README.md": README,
        "CHANGELOG.md": CHANGELOG,
        ".ansible-lint": dump(LINT),
    }


def assemble(dest: Path, root: Path | None = None) -> Path:
    """Write the collection under `dest` (a collections path: `dest/ansible_collections/sparkfab/
    fabric`) and return the collection's folder."""
    folder = home(dest)
    files = sources(root)
    for rel, src in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, folder / rel)
    for rel, text in _generated(files).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def home(collections: Path) -> Path:
    """The collection's folder in a collections path."""
    return collections / "ansible_collections" / NAMESPACE / NAME


def _digest(root: Path | None = None) -> str:
    h = hashlib.sha256(__version__.encode())
    files = sources(root)
    for rel, src in files.items():
        h.update(rel.encode() + b"\0" + src.read_bytes() + b"\0")
    for rel, text in _generated(files).items():
        h.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def for_runs(work: Path, root: Path | None = None) -> Path:
    """The collections path of a run kept in `work` (a cluster's state): the collection assembled
    from the content sparkfab runs with, written again only when that content changed (an edited
    role in a checkout is in the next run). The caller holds the cluster's lock; the new copy is
    complete before it replaces the old (a rename), so a run killed midway leaves a whole one."""
    base = work / "collections"
    stamp = base / "content"
    digest = _digest(root)
    if stamp.is_file() and stamp.read_text() == digest and (base / "ansible_collections").is_dir():
        return base
    base.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
    assemble(fresh, root)
    old = base / "ansible_collections"
    if old.exists():
        shutil.rmtree(old)
    (fresh / "ansible_collections").rename(old)
    fresh.rmdir()
    stamp.write_text(digest)
    return base


def tarball_name() -> str:
    return f"{NAMESPACE}-{NAME}-{__version__}.tar.gz"


def is_ours(path: Path) -> bool:
    """A tarball of this collection (its MANIFEST.json names it): one sparkfab may replace."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            member = tar.getmember("MANIFEST.json")
            if not member.isfile() or member.size > 1 << 20:
                return False
            f = tar.extractfile(member)
            info = json.load(f)["collection_info"] if f else {}
    except (OSError, tarfile.TarError, KeyError, ValueError, TypeError, EOFError):
        return False
    return isinstance(info, dict) and (info.get("namespace"), info.get("name")) == (NAMESPACE, NAME)


def build(output: Path) -> Path:
    """The collection's tarball, built by `ansible-galaxy collection build` and put into the
    folder `output` (made where missing) beside any other file there; a tarball of the same name
    is replaced only where it is this collection's (outputs never replace what sparkfab did not
    write). Raises CalledProcessError where ansible-galaxy fails."""
    output = plain_target(output, "-o")
    if output.exists() and not output.is_dir():
        raise UsageError(f"-o {output}: not a directory")
    target = check_file(output / tarball_name(), ours=is_ours) if output.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="sparkfab-collection-") as tmp:
        folder = assemble(Path(tmp) / "src")
        galaxy_bin = Path(sys.executable).parent / "ansible-galaxy"
        cmd = [str(galaxy_bin) if galaxy_bin.exists() else "ansible-galaxy", "collection", "build"]
        subprocess.run(
            [*cmd, "--output-path", str(Path(tmp) / "dist"), str(folder)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
        )
        output.mkdir(parents=True, exist_ok=True)
        target = target or check_file(output / tarball_name(), ours=is_ours)
        write_file(target, (Path(tmp) / "dist" / tarball_name()).read_bytes())
    return target
