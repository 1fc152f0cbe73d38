"""Read an inventory's YAML the way Ansible does (PyYAML, YAML 1.1, the libyaml parser), with
line numbers, in bounded time and memory.

Bounds: the file size, the number of values after YAML aliases are expanded (an alias bomb is
refused, not expanded), cycles through aliases, and the nesting depth (libyaml's own limit).
The result is plain dicts and lists that also carry each key's and item's line (`.lc`, the
interface ruamel's round-trip types offer), so problems can point at a line. Values with
a tag of their own (`!vault |`, `!unsafe`) stay text of type `Tagged`, which remembers the tag.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml is in every wheel of PyYAML
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_BYTES = 8 * 1024 * 1024
MAX_VALUES = 100_000  # after alias expansion; an 8-Spark inventory has a few hundred

_STD = "tag:yaml.org,2002:"
_MERGE = _STD + "merge"
_COLLECTIONS = {_STD + "map", _STD + "seq"}
_SCALARS = {_STD + t for t in ("str", "int", "float", "bool", "null", "timestamp", "binary", "merge", "value")}


class YamlProblem(Exception):
    """The text cannot be read as an inventory: why, and where (1-based line) when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class Tagged(str):
    """A scalar written with a tag YAML does not define (Ansible's `!vault`, `!unsafe`)."""

    tag: str

    def __new__(cls, value: str, tag: str) -> Tagged:
        obj = super().__new__(cls, value)
        obj.tag = tag
        return obj

    def __reduce__(self) -> tuple[type[Tagged], tuple[str, str]]:  # copies and pickles keep the tag
        return (Tagged, (str(self), self.tag))


class _Lines:
    """0-based lines of keys and items, as ruamel's `.lc` reports them."""

    def __init__(self) -> None:
        self.keys: dict[Any, int] = {}
        self.items: list[int] = []

    def key(self, k: Any) -> tuple[int, int]:
        return self.keys[k], 0

    def item(self, i: int) -> tuple[int, int]:
        return self.items[i], 0


class LMap(dict[Any, Any]):
    lc: _Lines


class LSeq(list[Any]):
    lc: _Lines


def read_text(path: str | Path, what: str = "file") -> str:
    """The file as text: bounded in size, UTF-8 (a decode error names its line, not the text)."""
    p = Path(path)
    if p.is_dir():
        raise YamlProblem(f"is a directory, not a {what}")
    if p.exists() and not p.is_file():
        raise YamlProblem(f"is not a regular file (a FIFO, device or socket): sparkfab reads a {what} from a file")
    # O_NONBLOCK: a path that became a FIFO after the check does not block the open
    with os.fdopen(os.open(p, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlProblem(f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not a {what} sparkfab reads")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlProblem(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", line) from None
    if "\x00" in text:
        raise YamlProblem("holds a NUL byte: not a text file", text[: text.index("\x00")].count("\n") + 1)
    return text


def parse(text: str) -> Any:
    """The YAML document as LMap/LSeq/scalars; YamlProblem when it is not one bounded document."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(exc.problem or exc.context or "error").split())
        raise YamlProblem(f"not valid YAML: {problem}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"not valid YAML: {' '.join(str(exc).split())[:200]}") from None
    if node is None:
        return None
    return _Builder().build(node)


#: how deep collections may nest (libyaml allows 1,000; the builder and every reader after it
#: recurse, and no inventory, recipe or run file nests more than a few levels)
MAX_DEPTH = 200


class _Builder:
    def __init__(self) -> None:
        self.count = 0
        self.active: set[int] = set()
        self.scalars = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise YamlProblem(
                f"expands to more than {MAX_VALUES:,} values (YAML aliases?): refused, not expanded",
                node.start_mark.line + 1,
            )
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if id(node) in self.active:
            raise YamlProblem("an alias refers to a value that contains it (a cycle)", node.start_mark.line + 1)
        if node.tag not in _COLLECTIONS:
            tag = node.tag.replace(_STD, "!!")
            raise YamlProblem(f"tag {tag} on a collection is not supported", node.start_mark.line + 1)
        if len(self.active) >= MAX_DEPTH:
            raise YamlProblem(f"nests more than {MAX_DEPTH} collections deep: refused", node.start_mark.line + 1)
        self.active.add(id(node))
        try:
            return self._seq(node) if isinstance(node, yaml.SequenceNode) else self._map(node)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag.startswith(_STD) and node.tag not in _SCALARS:
            raise YamlProblem(f"tag {node.tag.replace(_STD, '!!')} is not supported", node.start_mark.line + 1)
        if not node.tag.startswith(_STD):
            return Tagged(str(node.value), node.tag)
        try:
            return self.scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, AttributeError, OverflowError):
            raise YamlProblem(
                f"bad {node.tag.replace(_STD, '!!')} value {str(node.value)[:40]!r}", node.start_mark.line + 1
            ) from None

    def _seq(self, node: yaml.Node) -> LSeq:
        out, lines = LSeq(), _Lines()
        for item in node.value:
            out.append(self.build(item))
            lines.items.append(item.start_mark.line)
        out.lc = lines
        return out

    def _map(self, node: yaml.Node) -> LMap:
        out, lines = LMap(), _Lines()
        merged: dict[Any, tuple[Any, int]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                for src in self._merge_sources(value_node):
                    for k, v in src.items():
                        merged.setdefault(k, (v, src.lc.keys.get(k, value_node.start_mark.line)))
                continue
            key = self.build(key_node)
            if isinstance(key, (dict, list)):
                raise YamlProblem("a mapping key must be a plain value", key_node.start_mark.line + 1)
            if key in out:
                raise YamlProblem(f"duplicate key '{key}'", key_node.start_mark.line + 1)
            out[key] = self.build(value_node)
            lines.keys[key] = key_node.start_mark.line
        for k, (v, line) in merged.items():
            if k not in out:
                out[k] = v
                lines.keys[k] = line
        out.lc = lines
        return out

    def _merge_sources(self, node: yaml.Node) -> list[LMap]:
        value = self.build(node)
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, LMap) for s in sources):
            raise YamlProblem("'<<' merges mappings only", node.start_mark.line + 1)
        return sources


class _Dumper(yaml.SafeDumper):
    """safe_dump's YAML with a mapping's lists indented under their key, as yamllint (and so
    ansible-lint's production profile) wants the rendered inventory and host_vars."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_tagged(dumper: yaml.SafeDumper, data: Tagged) -> yaml.Node:
    return dumper.represent_scalar(data.tag, str(data), style="|" if "\n" in data else None)


_Dumper.add_representer(Tagged, _represent_tagged)


def dump(doc: Any, width: int = 120) -> str:
    """YAML for Ansible: like yaml.safe_dump, with tagged values (`!vault`) written back as they came."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=width, allow_unicode=True)
