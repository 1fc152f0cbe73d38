"""Where a value is in the file: a path of keys and indexes, its text and its line."""

from __future__ import annotations

import re
from typing import Any


def path_text(path: tuple[Any, ...]) -> str:
    """`all.vars.sparkfab.cables[2]`: a path as the messages print it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def walk(raw: Any, path: tuple[Any, ...]) -> Any:
    """The node at `path` in a YAML tree, or None."""
    node = raw
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def line_of(raw: Any, path: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest node on `path` that the YAML tree knows about."""
    node, line = raw, None
    for part in path:
        lc = getattr(node, "lc", None)
        try:
            if lc is not None:
                pos = lc.key(part) if isinstance(node, dict) else lc.item(part)
                line = pos[0] + 1
            node = node[part]
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return line


_SUFFIX = re.compile(r"^(.*):([^:]+)\Z")


def split_end(end: str) -> tuple[str, str]:
    m = _SUFFIX.match(end)
    assert m is not None  # guaranteed by EndRef
    return m.group(1), m.group(2)


def present(loc: tuple[Any, ...], tree: Any) -> tuple[Any, ...]:
    """`loc` without pydantic's own steps (`[key]`, `function-after[...]`, a union's branch such as
    `int` or `str`): each part kept is a key or index the tree holds, or the first one it lacks
    (an unknown or missing key), so a user's key that looks like a tag (`mtu[1]`) stays."""
    out: list[Any] = []
    node = tree
    for part in loc:
        here = (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and -len(node) <= part < len(node)
        )
        if here:
            out.append(part)
            node = node[part]
        elif not _pydantic_step(part) and node is not _GONE:
            out.append(part)  # the key the error is about, not in the tree
            node = _GONE
    return tuple(out)


_GONE = object()


def _pydantic_step(part: Any) -> bool:
    return isinstance(part, str) and (
        "[" in part or part.startswith("function-") or part in ("int", "float", "str", "bool", "none", "list", "dict")
    )
