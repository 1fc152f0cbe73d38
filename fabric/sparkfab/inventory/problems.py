"""Structural validation: the raw tree against the model, every problem at once with its
path, its line and a hint (pydantic's errors mapped to the words of the file)."""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import Any

from pydantic import (
    ValidationError,
)

from sparkfab.errors import InventoryError, Problem
from sparkfab.files import yamlload
from sparkfab.inventory.ansible import LEFT_OUT
from sparkfab.inventory.ansible_child import sparkfab_key
from sparkfab.inventory.locate import line_of, path_text, present, walk
from sparkfab.inventory.model import Inventory, model_at

_TOP_KEYS = ("all",)
_ALL_KEYS = ("hosts", "vars", "children")


def parse_partial(raw: Any, source: str = "") -> tuple[Inventory | None, list[Problem]]:
    """Structural validation. On errors in keys that have defaults (or unknown keys), the
    model is repaired by dropping them so that the semantic checks can still run and the
    user sees every problem in one go."""
    groups, left_out = _groups(raw)
    hosts_raw, group_vars, problems = _top(raw, source)
    problems += _tagged(group_vars.get("sparkfab"), ("all", "vars", "sparkfab"), raw)
    block = group_vars.get("sparkfab")
    if block is None:
        problems.append(
            Problem(
                "all.vars",
                "no 'sparkfab' block",
                "put the cluster under all.vars.sparkfab",
                line_of(raw, ("all", "vars")),
            )
        )
        raise InventoryError(problems, source)
    hosts, ansible = _split_host_vars(hosts_raw)
    others = {k: v for k, v in group_vars.items() if k != "sparkfab"}
    problems += _ansible_vars(ansible, others, raw)
    # a host connects with its group's settings unless it has its own (Ansible's precedence)
    group_ansible = {str(k): _plain(v) for k, v in others.items() if str(k).startswith("ansible_")}
    group_ansible.pop("ansible_host", None)
    ansible = {h: {**group_ansible, **ansible.get(h, {})} for h in hosts}
    for key in [k for k in others if str(k).startswith("sparkfab_")]:
        problems.append(
            Problem(
                f"all.vars.{key}",
                "reserved: sparkfab writes the sparkfab_* variables of its rendered inventory itself",
                "remove it; lab behaviour comes only from `--lab` or the inventory `sparkfab lab up` wrote",
                line_of(raw, ("all", "vars", key)),
            )
        )
        del others[key]
    data = _plain({"hosts": hosts, "sparkfab": block, "group_vars": others, "source": source})
    data |= {"groups": groups, "left_out": left_out}
    inv = None
    for attempt in range(4):
        try:
            inv = Inventory.model_validate(data)
            break
        except ValidationError as exc:
            if attempt == 0:
                problems += _one_per_place([_from_pydantic(err, raw) for err in exc.errors()], exc.errors())
            if not _repair(data, exc.errors()):
                return None, problems
    if inv is None:
        return None, problems
    problems += _group_problem(inv, raw)
    merged = {h: v.model_copy(update={"ansible": ansible.get(h, {})}) for h, v in inv.hosts.items()}
    return inv.model_copy(update={"hosts": merged}), problems


def _group_problem(inv: Inventory, raw: Any) -> list[Problem]:
    """The block's `group:` where it names no group of the inventory's with hosts."""
    named = inv.sparkfab.group
    if not named or named in inv.groups:
        return []
    where = ("all", "vars", "sparkfab", "group")
    known = ", ".join(sorted(g for g, hosts in inv.groups.items() if hosts))
    if named in ("all", "ungrouped"):
        members = "every host" if named == "all" else "hosts in no group"
        what = f"names {named!r}, Ansible's implicit group of {members}"
        hint = (
            f"name the cluster's own group{f' ({known})' if known else ''}, or leave group out: "
            "then the hosts that carry this block are the cluster"
        )
    elif known:
        what, hint = f"no group {named!r} with hosts", f"the inventory's groups with hosts: {known}"
    else:
        what = "names a group, and this inventory has none"
        hint = "an inventory with groups (INI, YAML with children:, a directory) names the cluster's group"
    return [Problem(path_text(where), what, hint, line_of(raw, where))]


#: Stand-ins for required values that are wrong, so that the other checks still run.
_STAND_INS = {("sparkfab", "cluster"): "invalid-name"}


#: Ansible variables sparkfab also writes into an ssh_config, with the form each must have.
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\Z")


def _port_ok(v: Any) -> bool:
    text = str(v) if isinstance(v, int | str) and not isinstance(v, bool) else ""
    return text.isascii() and text.isdigit() and 1 <= int(text) <= 65535


def user_name_ok(v: Any) -> bool:
    """A login name as ssh and sparkfab's ssh_config take it (one line: no option smuggled in)."""
    return isinstance(v, str) and bool(_USER.match(v))


_user_ok = user_name_ok


#: every spelling Ansible (and the ssh_config sparkfab writes, connection.py) takes for them
_SSH_VARS: dict[str, Any] = {
    **dict.fromkeys(("ansible_user", "ansible_ssh_user", "ansible_remote_user"), _user_ok),
    **dict.fromkeys(("ansible_port", "ansible_ssh_port"), _port_ok),
}


def _templated(value: Any) -> bool:
    """A value Ansible resolves itself (a Jinja expression, or tagged like `!vault`)."""
    return isinstance(value, yamlload.Tagged) or (isinstance(value, str) and "{{" in value)


def _ansible_vars(hosts: dict[str, dict[str, Any]], group: dict[str, Any], raw: Any) -> list[Problem]:
    """Ansible's variables pass through, but none may break a line of the files they land in
    (the rendered inventory, an ssh_config): no line breaks outside tagged (`!vault`) values,
    and a user name and port that are one."""
    problems = []
    places: list[tuple[tuple[str, ...], Any]] = [
        (("all", "hosts", h, k), v) for h, hv in hosts.items() for k, v in hv.items()
    ]
    places += [(("all", "vars", k), v) for k, v in group.items()]
    for path, value in places:
        key = str(path[-1])
        if isinstance(value, str) and not isinstance(value, yamlload.Tagged) and any(c in value for c in "\n\r\x00"):
            problems.append(
                Problem(path_text(path), "has a line break or NUL", "write it on one line", line_of(raw, path))
            )
        elif key in _SSH_VARS and not _templated(value) and not _SSH_VARS[key](value):
            problems.append(
                Problem(
                    path_text(path),
                    f"{str(value)[:60]!r} is not a valid {key}",
                    _HINTS.get(key.replace("_ssh_", "_").replace("_remote_", "_"), ""),
                    line_of(raw, path),
                )
            )
    return problems


def _groups(raw: Any) -> tuple[dict[str, list[str]], list[str]]:
    """The user's groups (`all.children`, as the Ansible reader hands them over) and the hosts it
    left out of the cluster; both taken out of the tree, which then has the plain shape."""
    group = raw.get("all") if isinstance(raw, dict) else None
    if not isinstance(group, dict):
        return {}, []
    left_out = [str(h) for h in group.pop(LEFT_OUT, None) or []]
    children = group.get("children")
    if not isinstance(children, dict) or not all(isinstance(v, dict) for v in children.values()):
        return {}, left_out
    del group["children"]
    return {str(g): [str(h) for h in (v.get("hosts") or {})] for g, v in children.items()}, left_out


def _top(raw: Any, source: str) -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    """all.hosts and all.vars, each a mapping (or the InventoryError that says why not)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("all"), dict):
        hint = "an inventory starts with 'all:' holding 'hosts:' and 'vars: {sparkfab: ...}'"
        raise InventoryError([Problem("(top)", "no 'all' group", hint)], source)
    problems = _unknown(raw, (), _TOP_KEYS, raw)
    group = raw["all"]
    problems += _unknown(group, ("all",), _ALL_KEYS, raw)
    parts = {key: group.get(key) or {} for key in ("hosts", "vars")}
    shape = [
        Problem(
            f"all.{key}",
            f"must be a mapping, not a {type(value).__name__}",
            "write 'hosts:' as {name: {ansible_host: ...}} and 'vars:' as {sparkfab: {...}}",
            line_of(raw, ("all", key)),
        )
        for key, value in parts.items()
        if not isinstance(value, dict)
    ]
    if shape:
        raise InventoryError(problems + shape, source)
    problems += [
        Problem(
            "all.hosts",
            f"a host named {name!r}: YAML read the name as a {type(name).__name__}, not as text",
            "quote it ('no', '1.10'): YAML 1.1, which Ansible reads, takes yes/no/on/off and numbers as values",
            line_of(raw, ("all", "hosts", name)),
        )
        for name in parts["hosts"]
        if not isinstance(name, str)
    ]
    return parts["hosts"], parts["vars"], problems


def _repair(data: dict[str, Any], errors: list[Any]) -> bool:
    """Drop every key an error points at if the model can do without it (an instance or a host
    entry that cannot be read goes as a whole; a required value gets a stand-in)."""
    for err in errors:
        loc = list(present(tuple(err["loc"]), data))
        parent = walk(data, tuple(loc[:-1]))
        key = loc[-1] if loc else None
        model = model_at(tuple(loc[:-1]))
        optional = model is not None and key in model.model_fields and not model.model_fields[str(key)].is_required()
        free = model is None and len(loc) >= 2 and model_at(tuple(loc[:-2])) is not None  # env, flags: user keys
        if tuple(loc) in _STAND_INS and isinstance(parent, dict):
            parent[key] = _STAND_INS[tuple(loc)]
        elif isinstance(parent, dict) and key in parent and (err["type"] == "extra_forbidden" or optional or free):
            del parent[key]
        elif len(loc) >= 3 and loc[:2] == ["sparkfab", "instances"] and isinstance(data["sparkfab"], dict):
            data["sparkfab"]["instances"].pop(loc[2], None)
        elif len(loc) >= 2 and loc[0] == "hosts" and loc[1] in data["hosts"]:
            data["hosts"][loc[1]] = {}
        else:
            return False
    return True


def _tagged(node: Any, path: tuple[Any, ...], raw: Any) -> list[Problem]:
    """sparkfab's own keys take plain values: a tagged one (`!vault`, `!unsafe`) is refused."""
    if isinstance(node, yamlload.Tagged):
        return [
            Problem(
                path_text(path),
                f"a {node.tag} value: sparkfab reads its own keys as plain text",
                "encrypted or tagged values belong to Ansible's variables (e.g. ansible_become_password)",
                line_of(raw, path),
            )
        ]
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    return [p for k, v in items for p in _tagged(v, (*path, k), raw)]


def _split_host_vars(hosts_raw: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Separate the host keys sparkfab validates from Ansible's `ansible_*` ones (kept for the
    connection); any other variable is the user's own, for their own plays, and is left alone."""
    ours: dict[str, Any] = {}
    theirs: dict[str, dict[str, Any]] = {}
    for name, hv in (hosts_raw or {}).items():
        hv = hv or {}
        if not isinstance(hv, dict):
            ours[str(name)] = hv
            continue
        theirs[str(name)] = {
            k: _plain(v) for k, v in hv.items() if str(k).startswith("ansible_") and k != "ansible_host"
        }
        ours[str(name)] = {k: v for k, v in hv.items() if sparkfab_key(str(k))}
    return ours, theirs


def plain(v: Any) -> Any:
    """Line-carrying (or ruamel's commented) containers -> plain dicts and lists."""
    return _plain(v)


def _plain(v: Any) -> Any:
    """ruamel's commented containers -> plain dicts and lists."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _unknown(node: Any, path: tuple[Any, ...], allowed: tuple[str, ...], raw: Any) -> list[Problem]:
    return [
        Problem(path_text(path + (k,)), f"unknown key '{k}'", _did_you_mean(str(k), allowed), line_of(raw, path + (k,)))
        for k in node
        if k not in allowed
    ]


def _did_you_mean(word: str, choices: Any) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    known = ", ".join(sorted(choices))
    return f"did you mean '{close[0]}'? (known keys: {known})" if close else f"known keys: {known}"


def _raw_loc(loc: tuple[Any, ...], raw: Any) -> tuple[Any, ...]:
    """pydantic's location -> the path in the YAML file (all.vars.sparkfab..., list cables)."""
    if not loc:
        return ("all",)
    head, *rest = loc
    if head == "hosts":
        return present(("all", "hosts", *rest), raw)
    out: list[Any] = ["all", "vars", "sparkfab"]
    rest_t = tuple(rest)
    i = 0
    while i < len(rest_t):
        part = rest_t[i]
        out.append(part)
        if part == "cables" and i + 2 < len(rest_t) and rest_t[i + 2] == "ends":
            cable = walk(raw, tuple(out) + (rest_t[i + 1],))
            if isinstance(cable, list):  # short form [a, b]: ends are the list itself
                out.append(rest_t[i + 1])
                i += 3
                continue
        i += 1
    return present(tuple(out), raw)


def _one_per_place(problems: list[Problem], errors: list[Any]) -> list[Problem]:
    """A value that fits none of a union's forms is one problem, not one per form (pydantic
    reports each branch: `.int`, `.str`, ...)."""
    out: list[Problem] = []
    unions: dict[str, tuple[int, list[str]]] = {}  # path -> (its place in out, the forms tried)
    for p, err in zip(problems, errors, strict=True):
        branch = [_FORMS[x] for x in err["loc"] if isinstance(x, str) and x in _FORMS]
        if not branch:
            out.append(p)
            continue
        if p.path not in unions:
            unions[p.path] = (len(out), branch)
            out.append(p)
            continue
        at, forms = unions[p.path]
        forms += branch
        value = err.get("input")
        shown = f"a {type(value).__name__}" if isinstance(value, dict | list) else repr(value)[:60]
        out[at] = dataclasses.replace(
            out[at], message=f"{shown} is none of the forms it takes ({', '.join(forms)})", hint=""
        )
    return out


_FORMS = {"int": "a whole number", "float": "a number", "str": "text", "bool": "true/false", "none": "null"}


def _from_pydantic(err: Any, raw: Any) -> Problem:
    loc = _raw_loc(tuple(err["loc"]), raw)
    kind = err["type"]
    key = loc[-1] if loc else ""
    if kind == "extra_forbidden":
        model = model_at(tuple(err["loc"][:-1]))
        fields = [f for f in (model.model_fields if model else {}) if f != "ansible"]
        return Problem(path_text(loc), f"unknown key '{key}'", _did_you_mean(str(key), fields), line_of(raw, loc))
    msg = _message(err)
    return Problem(path_text(loc), msg, _hint_for(key, kind), line_of(raw, loc))


def _message(err: Any) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "required key is missing"
    if kind in ("greater_than_equal", "less_than_equal") and err["loc"][-1] == "mtu":
        return f"MTU {value} is outside 1280-9216"
    if kind == "literal_error":
        return f"'{value}' is not one of {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        loc = err["loc"]
        if loc[-1] == "[key]" and len(loc) >= 3:  # a key of a mapping (env, flags)
            return f"'{value}' is not a valid {str(loc[-3]).removesuffix('s')} name"
        return f"'{value}' is not a valid {loc[-1] if isinstance(loc[-1], str) else 'value'}"
    text = str(err["msg"]).removeprefix("Value error, ")
    if isinstance(value, dict | list) or repr(value) in text:  # a validator that named the value already
        return text
    return f"{text} (got {value!r})"


_HINTS = {
    "mtu": "jumbo frames on the fabric use 9000; both ends of a rail must match",
    "link_speed": "200 (both PCIe roots), 100e (one root: emulated 100 Gb/s) or 100 (100G breakout)",
    "cluster": "lower-case letters, digits and '-', at most 20 characters (it prefixes lab names)",
    "ends": "write a cable as [spark-a:p0, spark-b:p1] or [spark-a:p1, sw1:2/1]",
    "master_port": "an unprivileged port, 1024-65534: the engine's rendezvous (the next one is verify's)",
    "port": "the API port, 1024-65535 (not sshd's 22 or another privileged port)",
    "ansible_host": "the management address: an IP address or a DNS name",
    "ansible_user": "a login name: letters, digits, _ . - @",
    "ansible_port": "the SSH port: 1-65535",
    "subnet_pool": "a private range such as 192.168.96.0/20",
    "exporter": "true, false, or {port: 9465, interval_ms: 1, peak_window_s: 15}",
    "interval_ms": "the exporter's sampling interval, 0.1-1000 ms",
    "peak_window_s": "how far back the exporter's peaks look, 1-3600 s",
}


def _hint_for(key: Any, kind: str) -> str:
    if kind == "missing" and key == "cluster":
        return "name the cluster, e.g. 'cluster: ring4'"
    return _HINTS.get(str(key), "")
