"""The served checkpoint's config.json kept in a bench run: written by bench, read by report
(`report --estimate` finds the model there when the checkpoint is gone: a lab torn down, a cache
cleaned).

What a server says of a path is not followed on this machine: it is read here only where it is
the model the user named, else on the serving host through the inventory's connection
(`remote_read`), whose own file it is; a bare URL's answer stays text in run.json and nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from sparkfab.measure.bench.rundir import RunDir


def keep_config(out: RunDir, root: Any, model: str, remote_read: Callable[[str], str | None] | None) -> None:
    """Copy the config.json of the checkpoint the server says it loaded (`root`) into the run."""
    if not isinstance(root, str) or not root.startswith("/") or "\x00" in root:
        return
    path = str(PurePosixPath(root) / "config.json")
    text: str | None = None
    if root == model:
        try:
            text = Path(path).read_text(encoding="utf-8")[: 1 << 20]
        except OSError:  # not on this machine: on the host that serves it
            text = None
    if text is None and remote_read is not None:
        text = remote_read(path)
    try:
        if text is None or not isinstance(json.loads(text), dict):
            return
    except ValueError:
        return
    out.keep_model_config(text)


def config_of(run_dir: RunDir, model: Any) -> Path | None:
    """The served checkpoint's config.json: bench's copy in the run, else the local directory the
    user named as the model (never a path only the server's answer gave)."""
    if kept := run_dir.model_config():
        return kept
    if isinstance(model, str) and model.startswith("/") and (Path(model) / "config.json").is_file():
        return Path(model) / "config.json"
    return None
