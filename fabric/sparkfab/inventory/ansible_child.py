"""What runs in the child Python that reads an inventory with Ansible (`sparkfab.inventory.ansible`
starts it): Ansible's own inventory and variable managers, its vault secrets and Templar.

Importing Ansible patches the process that does it for good (`sys.intern`, which torch then
refuses), so this module imports Ansible only inside its functions, and only the child calls them.
It answers one JSON document on stdout.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from sparkfab.files import yamlload

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


#: The host keys sparkfab reads itself (validated strictly).
HOST_KEYS = ("ansible_host", "rank", "mgmt_if")


def sparkfab_key(key: str) -> bool:
    """A host key sparkfab validates: its own, anything named sparkfab*, and its own with
    letters swapped or in other case (`rnak`, `Rank`), so a slip of the keyboard is reported
    instead of passed over (a different word, such as `rack`, is the user's own)."""
    if key in HOST_KEYS or key.startswith("sparkfab"):
        return True
    return any(sorted(key.lower()) == sorted(k) for k in HOST_KEYS)


def parts(path: Path) -> list[Path]:
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


def _tag(value: Any) -> Any:
    """JSON cannot say `!vault`: a tagged text travels as {"!tag": tag, "text": text}."""
    if isinstance(value, yamlload.Tagged):
        return {"!tag": value.tag, "text": str(value)}
    if isinstance(value, dict):
        return {k: _tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v) for v in value]
    return value


#: Ansible's connection variables sparkfab's own ssh reads too: templated here, as Ansible
#: templates them when it connects
CONNECTION = frozenset(
    {
        *("ansible_host", "ansible_user", "ansible_ssh_user", "ansible_remote_user", "ansible_port"),
        *("ansible_ssh_port", "ansible_ssh_private_key_file", "ansible_private_key_file"),
        *("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_become_user", "ansible_become_method"),
    }
)
#: Ansible's variables that hold a password (besides every variable of a vault-encrypted file)
SECRETS = frozenset(
    {
        *("ansible_password", "ansible_ssh_pass", "ansible_ssh_password", "ansible_become_password"),
        *("ansible_become_pass", "ansible_sudo_pass", "ansible_sudo_password"),
    }
)
_KEYS = ("ansible_ssh_private_key_file", "ansible_private_key_file")


def _view_here(path: str) -> dict[str, Any]:
    """In the child: Ansible's view of the inventory, as ansible-playbook run here would have it."""
    from ansible import constants
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    # a source Ansible cannot parse is an error here, not a warning and an empty inventory
    constants.INVENTORY_UNPARSED_IS_FAILED = constants.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    try:
        loader = DataLoader()
        vault = _open_vaults(loader)
        manager = InventoryManager(loader=loader, sources=[path])
        variables = VariableManager(loader=loader, inventory=manager)
        vaulted = _vaulted_names(loader, Path(path)) if vault is not None else set()
        hosts, blocks, problems = {}, {}, []
        origins: dict[str, dict[str, list[Any]]] = {}  # host -> key -> [file, line] it was written at
        deferred: list[dict[str, str]] = []  # secrets left for Ansible to fill when it runs
        for host in manager.get_hosts():
            merged = variables.get_vars(host=host, include_hostvars=False)
            blocks[str(host.name)] = plain(merged.get("sparkfab"))
            origins[str(host.name)] = _origins(merged) | _name_origin(host.name, merged.get("inventory_file"))
            own = {}
            for key, value in merged.items():
                if key in MAGIC or key == "sparkfab":
                    continue
                if not str(key).startswith("ansible_"):
                    # the user's own variables travel by name only (a group's 4 MB value would
                    # otherwise be copied for every host): sparkfab reads none of them
                    keep = sparkfab_key(str(key)) and str(key) not in vaulted
                    own[str(key)] = plain(value) if keep else None
                    continue
                templated = isinstance(value, str) and ("{{" in value or "{%" in value)
                if str(key) in SECRETS and templated and fill_variables(value, merged) is None:
                    deferred.append({"host": str(host.name), "key": str(key)})
                try:
                    own[str(key)] = _as_ansible_uses(loader, merged, str(key), value, vault, vaulted)
                except AnsibleError as exc:
                    text = " ".join(str(getattr(exc, "message", exc)).split())[:200]
                    problems.append(
                        {"host": str(host.name), "key": str(key), "message": f"cannot be templated: {text}"}
                    )
            hosts[str(host.name)] = own
        groups = {str(g.name): sorted(str(h.name) for h in g.get_hosts()) for g in manager.groups.values()}
    except AnsibleError as exc:
        return {"error": " ".join(str(getattr(exc, "message", exc)).split())[:400]}
    answer = {"hosts": _tag(hosts), "blocks": _tag(blocks), "groups": groups, "problems": problems}
    return answer | {"deferred": deferred, "origins": origins}


def _origins(merged: dict[str, Any]) -> dict[str, list[Any]]:
    """Where each of a host's variables that sparkfab reads was written ([file, line]), as
    Ansible's data tags say (ansible-core 2.19 and later; none before)."""
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:
        return {}
    out: dict[str, list[Any]] = {}
    for key, value in merged.items():
        if key in MAGIC or not (str(key).startswith("ansible_") or sparkfab_key(str(key))):
            continue
        try:  # Ansible's internal API: should it change, problems keep the block's file
            tag = Origin.get_tag(value)
        except Exception:
            return {}
        path, line = getattr(tag, "path", None), getattr(tag, "line_num", None)
        if path and isinstance(line, int):
            out[str(key)] = [str(path), line]
    return out


def _name_origin(name: Any, source: Any) -> dict[str, list[Any]]:
    """Where a host's name was written, under the key "" ([file, line]): its data tag (a YAML
    inventory), else the line of its inventory file that starts with it (an INI file, whose
    names Ansible does not tag; a name made from a range is on no line: none)."""
    try:
        from ansible._internal._datatag._tags import Origin

        tag = Origin.get_tag(name)
    except Exception:  # Ansible's internal API, or before 2.19
        tag = None
    path, line = getattr(tag, "path", None), getattr(tag, "line_num", None)
    if path and isinstance(line, int):
        return {"": [str(path), line]}
    if not isinstance(source, str):
        return {}
    n = _first_words(source).get(str(name))
    return {"": [source, n]} if n else {}


@functools.lru_cache(maxsize=64)
def _first_words(source: str) -> dict[str, int]:
    """An inventory file's lines by their first word -> the first line number (read once per
    file, not once per host: an INI of 300 hosts is one read)."""
    out: dict[str, int] = {}
    try:
        if not Path(source).is_file():
            return out
        with open(source, "rb") as f:
            lines = f.read(8 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        return out
    for n, text in enumerate(lines, 1):
        words = text.split(None, 1)
        if words:
            out.setdefault(words[0], n)
    return out


def _open_vaults(loader: Any) -> Any:
    """The vault secrets Ansible would open this inventory with (its configured password file
    and vault ids; nothing is asked for): a VaultLib, or None without any."""
    from ansible import constants
    from ansible.cli import CLI
    from ansible.parsing.vault import VaultLib

    files = [constants.DEFAULT_VAULT_PASSWORD_FILE] if constants.DEFAULT_VAULT_PASSWORD_FILE else []
    secrets = CLI.setup_vault_secrets(
        loader,
        vault_ids=list(constants.DEFAULT_VAULT_IDENTITY_LIST or []),
        vault_password_files=files,
        ask_vault_pass=False,
        auto_prompt=False,
    )
    if not secrets:
        return None
    loader.set_vault_secrets(secrets)
    return VaultLib(secrets)


def _vaulted_names(loader: Any, path: Path) -> set[str]:
    """The variables written in the inventory's vault-encrypted files (group_vars/all/vault.yml)."""
    names: set[str] = set()
    for part in parts(path):
        try:
            with open(part, "rb") as f:
                if not f.read(14).startswith(b"$ANSIBLE_VAULT"):
                    continue
        except OSError:
            continue
        data = loader.load_from_file(str(part))
        names |= {str(k) for k in data} if isinstance(data, dict) else set()
    return names


#: why a connection variable is not filled while an inventory is read
NEEDS_ANSIBLE = (
    "needs more than variables to be filled (a lookup, a filter or an expression), and reading an inventory "
    "runs none: write the value, or a variable that holds it (a secret may need more: Ansible fills it when "
    "it runs the play)"
)
_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def fill_variables(value: str, variables: dict[str, Any], depth: int = 0) -> str | None:
    """`value` with each `{{ name }}` replaced by that variable's value (itself filled the same
    way, a vaulted one opened): the templating that needs no code. None where the value asks for
    more (a lookup, a filter, an expression, a statement, an undefined variable or a loop): that
    is not run while reading, as `ansible-inventory --list` runs none."""
    if depth > 10 or "{%" in value or "{#" in value:
        return None
    if "{{" in _REFERENCE.sub("", value) or "}}" in _REFERENCE.sub("", value):
        return None
    out, last = [], 0
    for m in _REFERENCE.finditer(value):
        name = m.group(1)
        if name not in variables or variables[name] is None:
            return None
        inner = str(variables[name])  # a vaulted value opens itself with the loader's secrets
        if "{{" in inner or "{%" in inner:
            filled = fill_variables(inner, variables, depth + 1)
            if filled is None:
                return None
            inner = filled
        out += [value[last : m.start()], inner]
        last = m.end()
    return "".join([*out, value[last:]])


def _as_ansible_uses(loader: Any, merged: dict[str, Any], key: str, value: Any, vault: Any, vaulted: set[str]) -> Any:
    """A host's variable as a play would use it: connection variables templated (a
    `{{ spark_user }}` becomes the user), a relative key made absolute against the working
    directory (where ssh would look for it), and a secret encrypted again (never in clear)."""
    import os

    from ansible.errors import AnsibleError

    secret = key in SECRETS or key in vaulted
    if (key in CONNECTION or key in SECRETS) and isinstance(value, str) and ("{{" in value or "{%" in value):
        filled = fill_variables(value, merged)
        if filled is not None:
            value = filled
        elif not secret:
            raise AnsibleError(NEEDS_ANSIBLE)
        # a secret that needs more than variables is Ansible's to fill when it runs (kept as written)
    if key in _KEYS and isinstance(value, str) and value and not value.startswith(("/", "~", "{{")):
        value = os.path.abspath(value)
    if secret and vault is not None and isinstance(value, str) and not _encrypted(value):
        text = vault.encrypt(str(value)).decode()
        return yamlload.Tagged(text, "!vault")
    return plain(value)


def _encrypted(value: Any) -> bool:
    return type(value).__name__ in ("AnsibleVaultEncryptedUnicode", "EncryptedString")


def _decrypt_here(texts: list[str]) -> dict[str, Any]:
    """Vault texts opened with the secrets Ansible would use (a become password for the checks:
    the answer goes back over the pipe only)."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader

    vault = _open_vaults(DataLoader())
    if vault is None:
        return {"error": "a vaulted become password, and no vault password: give --vault-password-file"}
    try:
        return {"texts": [vault.decrypt(t.encode()).decode() for t in texts]}
    except AnsibleError as exc:
        return {"error": " ".join(str(getattr(exc, "message", exc)).split())[:300]}


def _match_here(path: str, pattern: str) -> dict[str, Any]:
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    loader = DataLoader()
    _open_vaults(loader)
    manager = InventoryManager(loader=loader, sources=[path])
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
    if _encrypted(value):
        return yamlload.Tagged(str(getattr(value, "_ciphertext", "")), "!vault")
    return str(value)


if __name__ == "__main__":
    import sys

    command, *rest = sys.argv[1:]
    if command == "decrypt":  # the texts come on stdin: never on a command line
        answer = _decrypt_here(json.load(sys.stdin))
    else:
        answer = _view_here(*rest) if command == "view" else _match_here(*rest)
    sys.stdout.write(json.dumps(answer))
