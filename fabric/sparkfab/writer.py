"""The one module of sparkfab that writes rendered files to disk."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from sparkfab.render import File
from sparkfab.render.tree import Tree, bundle


def assets() -> dict[str, str]:
    """Files shipped inside the package that hosts receive unchanged."""
    return {"collective.py": resources.files("sparkfab").joinpath("collective.py").read_text(encoding="utf-8")}


def _write(root: Path, f: File) -> None:
    path = root / f.path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f.content, encoding="utf-8")
    os.chmod(tmp, f.mode)
    tmp.replace(path)


def write_tree(tree: Tree, out: Path) -> list[Path]:
    """Write DIR/<host>/..., DIR/inventory.yml, DIR/host_vars/<host>.yml; return what was written."""
    written = []
    for host, files in tree.hosts.items():
        for f in files:
            _write(out / host, f)
            written.append(out / host / f.path.lstrip("/"))
    bundles = [File(f"bundles/{host}.json", bundle(files), 0o600) for host, files in tree.hosts.items()]
    for f in (tree.inventory, *tree.host_vars.values(), *bundles):
        _write(out, f)
        written.append(out / f.path)
    return written
