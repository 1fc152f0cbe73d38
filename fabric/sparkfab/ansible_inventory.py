"""Read an inventory with Ansible's own inventory machinery.

Used for every inventory that is not the plain single-file shape (`all:` with `hosts:` and
`vars:` and nothing beside it): INI files, YAML with groups (`children:`), inventory
directories, and files with `group_vars/` or `host_vars/` beside them. Ansible's
InventoryManager and VariableManager merge the variables exactly as `ansible-playbook` will,
and the result is handed back in the plain shape, one merged mapping per host, so the rest of
sparkfab sees one form. The sparkfab block must sit in the vars of group `all` (wherever that
is written: `all.vars`, `[all:vars]`, `group_vars/all.yml`, `group_vars/all/*.yml`); the file it
came from is found again and read with line numbers, so problems still point at a line.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from sparkfab import yamlload
from sparkfab.errors import InventoryError, Problem, Unavailable, UsageError

#: What VariableManager adds to a host's variables on its own (not written by anyone).
MAGIC = frozenset(
    {
        "ansible_check_mode",
        "ansible_config_file",
        "ansible_diff_mode",
        "ansible_facts",
        "ansible_forks",
        "ansible_inventory_sources",
        "ansible_playbook_python",
        "ansible_run_tags",
        "ansible_skip_tags",
        "ansible_verbosity",
        "ansible_version",
        "group_names",
        "groups",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname",
        "inventory_hostname_short",
        "omit",
        "playbook_dir",
    }
)

_ALL_HINT = "write the sparkfab block once, in the vars of group all (all.vars, [all:vars] or group_vars/all.yml)"


def read(path: Path) -> tuple[dict[str, Any], str]:
    """({all: {hosts: {name: merged vars}, vars: {sparkfab: block}}}, the file its lines are in)."""
    hosts, blocks = _ansible_view(path)
    present = [b for b in blocks.values() if b is not None]
    group: dict[str, Any] = {}
    source = str(path)
    if present:
        usual = max(present, key=present.count)  # what group all says; the others override it
        differ = sorted(h for h, b in blocks.items() if b != usual)
        if differ:
            raise InventoryError(
                [Problem("all.vars.sparkfab", f"differs between hosts (e.g. on {', '.join(differ[:3])})", _ALL_HINT)],
                source,
            )
        node, where = _with_lines(path, usual)
        group["sparkfab"] = node
        source = where or source
    return {"all": {"hosts": hosts, "vars": group}}, source


def _ansible_view(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each host's merged variables and its sparkfab block, from Ansible in a child process
    (importing Ansible patches this process for good: `sys.intern`, which torch then refuses)."""
    if not path.exists():
        raise Unavailable(f"{path}: no such file")
    if path.is_dir() and not any(f.is_file() and not f.name.startswith(".") for f in path.iterdir()):
        hint = "an inventory directory holds hosts.ini or *.yml files, with group_vars/ and host_vars/ beside them"
        raise InventoryError([Problem("(file)", "is a directory without inventory files", hint)], str(path))
    problems = _screen(path)
    if problems:
        raise InventoryError(problems, str(path))
    out = _child("view", str(path))
    if "error" in out:
        message = f"Ansible cannot read it as an inventory: {out['error']} (its warnings above say why)"
        raise InventoryError([Problem("(file)", message)], str(path))
    return _untag(out["hosts"]), _untag(out["blocks"])


#: the inventory plugins the child enables: data only (Ansible's default list adds `script`,
#: which runs an executable inventory file, and plugin configs that may run lookups)
PLUGINS = "host_list,yaml,ini,toml"
#: what Ansible reads as YAML in group_vars/ and host_vars/ (and a file with no suffix there)
_YAML = {".yml", ".yaml", ".json", ""}


def _parts(path: Path) -> list[Path]:
    """Every file Ansible reads for this inventory: the file or the directory's files, and the
    group_vars/ and host_vars/ trees beside the file or in the directory."""
    base = path if path.is_dir() else path.parent
    roots = [path] if path.is_dir() else [path, base / "group_vars", base / "host_vars"]
    out: list[Path] = []
    for root in roots:
        if root.is_dir():
            out += sorted(p for p in root.rglob("*") if not p.name.startswith(".") and not p.is_dir())
        elif root.exists() or root.is_symlink():
            out.append(root)
    return out


def _screen(path: Path) -> list[Problem]:
    """The inventory's parts as data before Ansible reads them, with the plain reader's bounds:
    regular files within the size bound, YAML within the alias and nesting bounds, no
    executable file Ansible's script plugin would run."""
    problems = []
    base = path if path.is_dir() else path.parent
    for part in _parts(path):
        name = str(part.relative_to(base)) if part != path else path.name
        vars_dir = part.relative_to(base).parts[0] in ("group_vars", "host_vars") if part != path else False
        try:
            st = part.stat()
        except OSError as exc:
            problems.append(Problem(name, f"cannot be read: {exc.strerror or exc}"))
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(Problem(name, "is not a regular file (a FIFO, device or socket)", "remove it"))
        elif st.st_size > yamlload.MAX_BYTES:
            problems.append(
                Problem(name, f"is larger than {yamlload.MAX_BYTES >> 20} MiB", "an inventory part is small")
            )
        elif st.st_mode & 0o111 and part.suffix not in (".yml", ".yaml", ".ini", ".toml", ".json"):
            hint = "sparkfab reads inventories as data and does not run inventory scripts: chmod -x it, or remove it"
            problems.append(Problem(name, "is executable: Ansible would run it as a dynamic inventory", hint))
        elif part.suffix in _YAML and (vars_dir or part.suffix in (".yml", ".yaml")):
            try:
                yamlload.parse(yamlload.read_text(part))
            except yamlload.YamlProblem as exc:
                problems.append(Problem(name, exc.message, line=exc.line))
    return problems


def _child(*args: str) -> dict[str, Any]:
    """Run this module's command line in a fresh Python, with only the data plugins enabled,
    and read its JSON answer. Ansible's warnings are passed on; should the child die, its last
    line says why (not its traceback)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ANSIBLE_INVENTORY_ENABLED": PLUGINS}
    res = subprocess.run(
        [sys.executable, "-m", "sparkfab.ansible_inventory", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    if res.returncode != 0:
        last = lines[-1].strip()[:300] if lines else f"exit {res.returncode}"
        kind = Unavailable if last.startswith(("OSError", "PermissionError", "FileNotFoundError")) else UsageError
        raise kind(f"Ansible could not read the inventory: {last}")
    for line in lines:
        if not line.startswith(("Traceback", "  ")):
            sys.stderr.write(line + "\n")
    answer: dict[str, Any] = json.loads(res.stdout)
    return answer


def _tag(value: Any) -> Any:
    """JSON cannot say `!vault`: a tagged text travels as {"!tag": tag, "text": text}."""
    if isinstance(value, yamlload.Tagged):
        return {"!tag": value.tag, "text": str(value)}
    if isinstance(value, dict):
        return {k: _tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v) for v in value]
    return value


def _untag(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"!tag", "text"}:
            return yamlload.Tagged(value["text"], value["!tag"])
        return {k: _untag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untag(v) for v in value]
    return value


def _view_here(path: str) -> dict[str, Any]:
    """In the child: Ansible's view of the inventory."""
    from ansible import constants
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    # a source Ansible cannot parse is an error here, not a warning and an empty inventory
    constants.INVENTORY_UNPARSED_IS_FAILED = constants.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    try:
        loader = DataLoader()
        manager = InventoryManager(loader=loader, sources=[path])
        variables = VariableManager(loader=loader, inventory=manager)
        hosts, blocks = {}, {}
        for host in manager.get_hosts():
            merged = variables.get_vars(host=host, include_hostvars=False)
            blocks[str(host.name)] = plain(merged.get("sparkfab"))
            hosts[str(host.name)] = {str(k): plain(v) for k, v in merged.items() if k not in MAGIC and k != "sparkfab"}
    except AnsibleError as exc:
        return {"error": " ".join(str(getattr(exc, "message", exc)).split())[:400]}
    return {"hosts": _tag(hosts), "blocks": _tag(blocks)}


def _match_here(path: str, pattern: str) -> dict[str, Any]:
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    manager = InventoryManager(loader=DataLoader(), sources=[path])
    manager.subset(pattern)
    return {"hosts": [str(h.name) for h in manager.get_hosts()]}


def plain(value: Any) -> Any:
    """Ansible's own value types -> plain ones; an encrypted value stays text tagged `!vault`."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float):  # Ansible tags its values with subclasses of these
        if isinstance(value, kind):
            return kind(value)
    if type(value).__name__ in ("AnsibleVaultEncryptedUnicode", "EncryptedString"):
        return yamlload.Tagged(str(getattr(value, "_ciphertext", "")), "!vault")
    return str(value)


def _candidates(path: Path) -> list[tuple[Path, tuple[str, ...]]]:
    """Files the sparkfab block of group all may be written in, with its place in each."""
    base = path if path.is_dir() else path.parent
    out: list[tuple[Path, tuple[str, ...]]] = []
    for gv in (base / "group_vars",):
        for name in ("all.yml", "all.yaml", "all"):
            if (gv / name).is_file():
                out.append((gv / name, ("sparkfab",)))
        if (gv / "all").is_dir():
            out += [(f, ("sparkfab",)) for f in sorted((gv / "all").iterdir()) if f.suffix in (".yml", ".yaml")]
    inventories = sorted(base.iterdir()) if path.is_dir() else [path]
    out += [(f, ("all", "vars", "sparkfab")) for f in inventories if f.is_file() and f.suffix in (".yml", ".yaml")]
    return out


def _with_lines(path: Path, block: Any) -> tuple[Any, str | None]:
    """The block as written in its file (keys and items carry their lines), and that file."""
    for file, where in _candidates(path):
        try:
            tree = yamlload.parse(yamlload.read_text(file))
        except (OSError, yamlload.YamlProblem):
            continue
        node = tree
        for key in where:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None and plain(node) == block:
            return node, str(file)
    return block, None


def matching(inventory: Path, pattern: str) -> list[str]:
    """The hosts an Ansible `--limit` pattern selects in an inventory, as Ansible selects them."""
    return [str(h) for h in _child("match", str(inventory), pattern)["hosts"]]


if __name__ == "__main__":
    import sys

    command, *rest = sys.argv[1:]
    sys.stdout.write(json.dumps(_view_here(*rest) if command == "view" else _match_here(*rest)))
