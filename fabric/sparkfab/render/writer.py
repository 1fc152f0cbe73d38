"""The one module of sparkfab that writes rendered files to disk."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sparkfab.files.outputs import replace_dir
from sparkfab.render import File
from sparkfab.render.tree import Tree, bundle


def _write(root: Path, f: File) -> Path:
    path = root / f.path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f.content, encoding="utf-8")
    os.chmod(path, f.mode)
    return path


def write_tree(tree: Tree, out: Path, inputs: Iterable[Path | str] = ()) -> list[Path]:
    """Write DIR/<host>/..., DIR/inventory.yml, DIR/host_vars/<host>.yml, DIR/bundles/; return
    what was written. The tree is written beside DIR and renamed into place; DIR must be new,
    empty or an earlier rendered tree (`sparkfab.files.outputs`), and must not hold an input."""

    def write(root: Path) -> list[Path]:
        written = [_write(root / host, f) for host, files in tree.hosts.items() for f in files]
        bundles = [File(f"bundles/{host}.json", bundle(files), 0o600) for host, files in tree.hosts.items()]
        return written + [_write(root, f) for f in (tree.inventory, *tree.host_vars.values(), *bundles)]

    return replace_dir(out, "render", write, inputs)
