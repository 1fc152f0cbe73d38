"""Reading an inventory file: the plain single-file shape directly (bounded YAML with line
numbers), everything else through Ansible's own inventory machinery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkfab.errors import InventoryError, Problem, Unavailable
from sparkfab.files import yamlload
from sparkfab.inventory import ansible


def read(path: str | Path) -> tuple[Any, str]:
    """Any inventory Ansible reads, as one tree in the plain single-file shape (`all: {hosts,
    vars: {sparkfab}}`, one merged mapping per host), and the file its line numbers are in.

    The plain shape is read directly (it is what Ansible makes of it: a test holds the two
    readers equal); everything else (INI, groups, directories, group_vars/ and host_vars/)
    goes through Ansible's own inventory machinery (`sparkfab.inventory.ansible`).
    """
    p = Path(path)
    if p.suffix in (".yml", ".yaml") and not p.is_dir() and not _vars_dirs(p.parent):
        raw = load_raw(p)  # read once: the plain reader's tree, or the reason to ask Ansible
        if is_plain(raw):
            return raw, str(p)
    return _read_with_ansible(p)


def is_plain_file(path: str | Path) -> bool:
    """A YAML file in the plain shape, with no group_vars/ or host_vars/ beside it."""
    p = Path(path)
    if p.suffix not in (".yml", ".yaml") or p.is_dir() or _vars_dirs(p.parent):
        return False
    return not p.exists() or is_plain(load_raw(p))


def is_plain(raw: Any) -> bool:
    """`all:` alone at the top, without groups below it. Something that is not a set of
    Ansible groups at all stays with the plain reader too: its messages say what is wrong."""
    if not isinstance(raw, dict):
        return True
    groups = all(isinstance(v, dict) and v and set(v) <= {"hosts", "vars", "children"} for v in raw.values())
    return not groups or (set(raw) == {"all"} and "children" not in raw["all"])


def _vars_dirs(base: Path) -> bool:
    return (base / "group_vars").is_dir() or (base / "host_vars").is_dir()


def _read_with_ansible(path: Path) -> tuple[Any, str]:
    return ansible.read(path)


def load_raw(path: str | Path) -> Any:
    """The YAML tree as Ansible reads it, with line numbers, bounded (`sparkfab.files.yamlload`)."""
    path = Path(path)
    try:
        return yamlload.parse(yamlload.read_text(path, "inventory"))
    except FileNotFoundError:
        raise Unavailable(f"{path}: no such file") from None
    except PermissionError:
        raise Unavailable(f"{path}: permission denied") from None
    except yamlload.YamlProblem as exc:
        raise InventoryError([Problem("(file)", exc.message, line=exc.line)], str(path)) from None


def load_roundtrip(path: str | Path) -> Any:
    """The same file through ruamel's round-trip loader (comments kept), for files sparkfab
    rewrites; call it only on an inventory `load_raw` accepted."""
    from ruamel.yaml import YAML

    return YAML(typ="rt").load(Path(path).read_text(encoding="utf-8"))
