"""The inventory: one file (or an Ansible inventory directory) that is both what Ansible reads
and the cluster's description.

Loading is strict: the sparkfab block is parsed into frozen pydantic models that forbid
unknown keys (`model`), and every structural problem comes back at once as a `Problem` with
its path in the file, its line and a hint (`problems`, `locate`). `read.read` gives any inventory
Ansible reads as one tree in the plain shape; `ansible` reads one with Ansible's own reader, in
a child Python (`ansible_child`). What the values mean together is checked by `sparkfab.resolve`.

The names below are imported when first asked for (PEP 562), so that the child, started as
`python -m sparkfab.inventory.ansible_child` for every read through Ansible, does not import the
models and pydantic it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkfab.inventory.locate import line_of, path_text, split_end, walk
    from sparkfab.inventory.model import CLUSTER_PATTERN, HostVars, Inventory, Sparkfab, hostname
    from sparkfab.inventory.problems import parse_partial, plain
    from sparkfab.inventory.read import is_plain, is_plain_file, load_raw, load_roundtrip

#: each name this package gives, and the module of the package that defines it
_FROM = {
    **dict.fromkeys(("line_of", "path_text", "split_end", "walk"), "locate"),
    **dict.fromkeys(("CLUSTER_PATTERN", "HostVars", "Inventory", "Sparkfab", "hostname"), "model"),
    **dict.fromkeys(("parse_partial", "plain"), "problems"),
    **dict.fromkeys(("is_plain", "is_plain_file", "load_raw", "load_roundtrip"), "read"),
}
# (`read` itself is the module's name: `from sparkfab.inventory.read import read`)

__all__ = [
    "CLUSTER_PATTERN",
    "HostVars",
    "Inventory",
    "Sparkfab",
    "hostname",
    "is_plain",
    "is_plain_file",
    "line_of",
    "load_raw",
    "load_roundtrip",
    "parse_partial",
    "path_text",
    "plain",
    "split_end",
    "walk",
]


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
    globals()[name] = value
    return value
