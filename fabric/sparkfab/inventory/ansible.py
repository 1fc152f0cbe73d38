"""Read an inventory with Ansible's own inventory machinery.

Used for every inventory that is not the plain single-file shape (`all:` with `hosts:` and
`vars:` and nothing beside it): INI files, YAML with groups (`children:`), inventory
directories, and files with `group_vars/` or `host_vars/` beside them. Ansible's
InventoryManager and VariableManager merge the variables exactly as `ansible-playbook` will,
and the result is handed back in the plain shape, one merged mapping per host, so the rest of
sparkfab sees one form.

A site inventory holds more than Sparks. The cluster is the group the block's `group` names,
or else the hosts that carry the block (it may sit in the vars of any group: `all.vars`,
`[sparks:vars]`, `group_vars/sparks.yml`, `group_vars/sparks/*.yml`); the other hosts are left
out of everything sparkfab plans, renders and touches. The user's groups of the cluster's hosts
are kept, so an Ansible `--limit` pattern naming them means what it means to Ansible.

As Ansible does, the child opens vaults (`ANSIBLE_VAULT_PASSWORD_FILE`, `--vault-password-file`,
ansible.cfg's `vault_password_file` or vault ids) and templates the connection variables with
Ansible's own Templar. A secret (a password variable, or any variable from a vault-encrypted file) never
leaves it in clear: it is encrypted again with the same vault secret, as an inline `!vault`
value the run opens with the same password. The file the block came from is found again and
read with line numbers, so problems still point at a line.
"""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

from sparkfab import others
from sparkfab.errors import InventoryError, Problem, Unavailable, UsageError
from sparkfab.files import yamlload
from sparkfab.inventory.ansible_child import parts, plain

_ALL_HINT = (
    "write the sparkfab block once, in the vars of the cluster's group (all.vars, [sparks:vars], "
    "group_vars/sparks.yml), and name that group in it (group: sparks) when other hosts share the inventory"
)

#: the key of the tree's `all` that lists the inventory's hosts outside the cluster (no YAML
#: inventory can hold it: Ansible reads a file with groups, never the plain reader)
LEFT_OUT = "(left out)"
#: groups every inventory has; the rendered inventory declares its own
_IMPLICIT = frozenset({"all", "ungrouped"})


class PlainTree(dict[str, Any]):
    """The reader's tree in the plain shape, with `origins` beside it: {host: {key: (file,
    line)}}, where each host variable sparkfab reads was written. An attribute, not a key: every
    reader of the tree (the lab's copy of the inventory, the parser) sees the plain shape only."""

    origins: dict[str, dict[str, tuple[str, int]]]


def placed(problems: list[Problem], origins: dict[str, dict[str, tuple[str, int]]]) -> list[Problem]:
    """`problems` with the file and line each host variable (and each host's name) was written
    at, where it was written outside the file the others point into (a host_vars/ file, the INI
    file)."""
    where = {  # the key "": the host's name itself
        f"all.hosts.{host}" + (f".{key}" if key else ""): at
        for host, keys in origins.items()
        for key, at in keys.items()
    }
    out = []
    for p in problems:
        at = where.get(p.path) or next((a for k, a in where.items() if p.path.startswith((k + ".", k + "["))), None)
        out.append(replace(p, file=at[0], line=at[1]) if at else p)
    return out


def read(path: Path) -> tuple[dict[str, Any], str]:
    """({all: {hosts: {name: merged vars}, vars: {sparkfab: block}, children: {group: {hosts}},
    "(left out)": [hosts outside the cluster]}}, the file its lines are in)."""
    view = _ansible_view(path)
    hosts, blocks, groups = view["hosts"], view["blocks"], view["groups"]
    source = str(path)
    present = [b for b in blocks.values() if b is not None]
    usual = max(present, key=present.count) if present else None  # the others override it
    members = _cluster(blocks, groups, usual, source)
    tree: dict[str, Any] = {"hosts": {h: v for h, v in hosts.items() if h in members}, "vars": {}}
    if usual is not None:
        differ = sorted(h for h in members if blocks.get(h) != usual)
        if differ:
            raise InventoryError(
                [Problem("all.vars.sparkfab", f"differs between hosts (e.g. on {', '.join(differ[:3])})", _ALL_HINT)],
                source,
            )
        node, where = _with_lines(path, usual)
        tree["vars"]["sparkfab"] = node
        source = where or source
    kept = {g: [h for h in names if h in members] for g, names in groups.items() if g not in _IMPLICIT}
    if any(kept.values()):
        tree["children"] = {g: {"hosts": {h: None for h in names}} for g, names in sorted(kept.items()) if names}
    outside = sorted(set(hosts) - members)
    if outside:
        tree[LEFT_OUT] = outside
    origins = {
        h: {k: (_as_given(str(f), path), int(n)) for k, (f, n) in keys.items()}
        for h, keys in view["origins"].items()
        if h in members
    }
    for problem in view["problems"]:
        if problem["host"] in members:
            found = Problem(f"all.hosts.{problem['host']}.{problem['key']}", problem["message"])
            raise InventoryError(placed([found], origins), source)
    out = PlainTree({"all": tree})
    out.origins = origins
    return out, source


def _as_given(file: str, inventory: Path) -> str:
    """A file Ansible names absolutely, relative to here where the inventory was named so."""
    if inventory.is_absolute():
        return file
    try:
        return str(Path(file).relative_to(Path.cwd()))
    except ValueError:
        return file


def _cluster(blocks: dict[str, Any], groups: dict[str, list[str]], block: Any, source: str) -> set[str]:
    """The cluster's hosts: the group the block names, or else the hosts that carry the block
    (every host when it sits in group all)."""
    named = block.get("group") if isinstance(block, dict) else None
    if isinstance(named, str) and named:
        if not groups.get(named):
            known = ", ".join(sorted(g for g, names in groups.items() if names and g not in _IMPLICIT)) or "none"
            hint = f"the inventory's groups with hosts: {known}"
            raise InventoryError([Problem("all.vars.sparkfab.group", f"no group {named!r} with hosts", hint)], source)
        return set(groups[named])
    carrying = {h for h, b in blocks.items() if b is not None}
    return carrying or set(blocks)


def _ansible_view(path: Path) -> dict[str, Any]:
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
        message = f"Ansible cannot read it as an inventory: {out['error']}"
        if out.get(WARNED):
            message += " (its warnings above say why)"
        hint = ""
        if "vault" in out["error"].lower():
            hint = "give Ansible the vault password: --vault-password-file, ANSIBLE_VAULT_PASSWORD_FILE or ansible.cfg"
        raise InventoryError([Problem("(file)", message, hint)], str(path))
    _say_deferred(out.get("deferred") or [])
    return {
        "hosts": _untag(out["hosts"]),
        "blocks": _untag(out["blocks"]),
        "groups": out["groups"],
        "problems": out["problems"],
        "origins": out.get("origins") or {},
    }


def _say_deferred(deferred: list[dict[str, str]]) -> None:
    """Say which secrets need more than variables (a lookup, a filter): reading runs none of
    them; Ansible fills them when it runs the play."""
    import sys

    by_key: dict[str, list[str]] = {}
    for item in deferred:
        by_key.setdefault(item["key"], []).append(item["host"])
    for key, hosts in sorted(by_key.items()):
        shown = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
        sys.stderr.write(
            f"note: {key} of {shown} needs more than variables (a lookup or filter): not run while reading the "
            "inventory; Ansible fills it when it runs the play\n"
        )


#: the inventory plugins the child enables: data only (Ansible's default list adds `script`,
#: which runs an executable inventory file, and plugin configs that may run lookups)
PLUGINS = "host_list,yaml,ini,toml"
#: what Ansible reads as YAML in group_vars/ and host_vars/ (and a file with no suffix there)
_YAML = {".yml", ".yaml", ".json", ""}


def _screen(path: Path) -> list[Problem]:
    """The inventory's parts as data before Ansible reads them, with the plain reader's bounds:
    regular files within the size bound, YAML within the alias and nesting bounds, no
    executable file Ansible's script plugin would run."""
    problems = []
    base = path if path.is_dir() else path.parent
    for part in parts(path):
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


def decrypt(texts: list[str]) -> list[str]:
    """Vault texts (`!vault` values) opened by Ansible in a child, with the secrets it would use;
    the clear texts come back over its stdout pipe and are kept in memory only."""
    answer = _child("decrypt", stdin=json.dumps(texts))
    if "error" in answer:
        raise UsageError(f"Ansible could not open a vaulted value: {answer['error']}")
    return [str(t) for t in answer["texts"]]


#: the key `_child` adds to the child's answer: whether it passed Ansible's warnings on
WARNED = "_warned"


def _child(*args: str, stdin: str = "") -> dict[str, Any]:
    """Run this module's command line in a fresh Python, with only the data plugins enabled,
    and read its JSON answer. Ansible's warnings are passed on; should the child die, its last
    line says why (not its traceback)."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from sparkfab.inventory.ansiblecfg import check_ansible_files

    check_ansible_files(dict(os.environ), Path.cwd())  # nothing the child opens may block it
    env = {**os.environ, "ANSIBLE_INVENTORY_ENABLED": PLUGINS}
    # Ansible makes its local temporary directory under ~/.ansible/tmp unless told otherwise; a
    # reader needs none of the user's home (which may be read-only), so it gets one of its own
    with tempfile.TemporaryDirectory(prefix="sparkfab-ansible-") as scratch:
        env.setdefault("ANSIBLE_LOCAL_TEMP", scratch)
        res = subprocess.run(
            [sys.executable, "-m", "sparkfab.inventory.ansible_child", *args],
            input=stdin,
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
    said = [line for line in lines if not line.startswith(("Traceback", "  "))]
    for line in said:
        sys.stderr.write(line + "\n")
    answer: dict[str, Any] = json.loads(res.stdout)
    # Ansible's own warnings, not another package's Python warning (shown only with -v)
    answer[WARNED] = any(not line.startswith(("Traceback", "  ")) for line in others.own_lines("\n".join(lines)))
    return answer


def _untag(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"!tag", "text"}:
            return yamlload.Tagged(value["text"], value["!tag"])
        return {k: _untag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untag(v) for v in value]
    return value


def _candidates(path: Path) -> list[Path]:
    """Files the sparkfab block may be written in: any group's vars files, then the inventory's
    YAML files."""
    base = path if path.is_dir() else path.parent
    gv = base / "group_vars"
    out: list[Path] = []
    if gv.is_dir():
        for entry in sorted(gv.iterdir()):
            if entry.is_file() and entry.suffix in (".yml", ".yaml", ""):
                out.append(entry)
            elif entry.is_dir():
                out += [f for f in sorted(entry.iterdir()) if f.is_file() and f.suffix in (".yml", ".yaml")]
    inventories = sorted(base.iterdir()) if path.is_dir() else [path]
    return out + [f for f in inventories if f.is_file() and f.suffix in (".yml", ".yaml")]


def _blocks_in(tree: Any, depth: int = 0) -> list[Any]:
    """Every `sparkfab` value in a group_vars file (at its top) or an inventory's groups' vars."""
    if not isinstance(tree, dict) or depth > 32:
        return []
    found = [tree["sparkfab"]] if depth == 0 and "sparkfab" in tree else []
    for group in tree.values():
        if isinstance(group, dict):
            found += (
                [group["vars"]["sparkfab"]]
                if isinstance(group.get("vars"), dict) and "sparkfab" in group["vars"]
                else []
            )
            found += _blocks_in(group.get("children"), depth + 1)
    return found


def _with_lines(path: Path, block: Any) -> tuple[Any, str | None]:
    """The block as written in its file (keys and items carry their lines), and that file."""
    for file in _candidates(path):
        try:
            tree = yamlload.parse(yamlload.read_text(file))
        except (OSError, yamlload.YamlProblem):
            continue
        for node in _blocks_in(tree):
            if plain(node) == block:
                return node, str(file)
    return block, None


def matching(inventory: Path, pattern: str) -> list[str]:
    """The hosts an Ansible `--limit` pattern selects in an inventory, as Ansible selects them."""
    return [str(h) for h in _child("match", str(inventory), pattern)["hosts"]]
