"""The inventory: one YAML file that is both an Ansible inventory and the cluster description.

Loading is strict: the sparkfab block is parsed into frozen pydantic models that forbid
unknown keys, and every structural problem comes back at once as a `Problem` with its path
in the file, its line and a hint. Semantic checks (cabling, subnets, rings) live in
`sparkfab.validate`.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from sparkfab import spark
from sparkfab.errors import InventoryError, Problem

Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=63)]
ClusterName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,19}$")]
IfName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,15}$")]
EndRef = Annotated[str, StringConstraints(pattern=r"^[^:\s]+:[^:\s]+$")]
Mtu = Annotated[int, Field(ge=1280, le=9216)]
LinkSpeed = Literal["200", "100e", "100"]


def _as_str(v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostVars(Strict):
    """Per-host keys sparkfab reads; `ansible_*` keys pass through to Ansible untouched."""

    ansible_host: str | None = None
    rank: Annotated[int, Field(ge=0)] | None = None
    mgmt_if: IfName = spark.DEFAULT_MGMT_IF
    ansible: dict[str, Any] = Field(default_factory=dict, exclude=True)


class Switch(Strict):
    model: Literal["CRS804", "CRS812", "generic"]
    ports: Annotated[int, Field(ge=1, le=512)] | None = None
    speed: Literal[100, 200, 400, 800] | None = None
    subnets: list[ipaddress.IPv4Network] | None = None


class Cable(Strict):
    ends: list[EndRef]
    subnets: list[ipaddress.IPv4Network] | None = None

    @field_validator("ends")
    @classmethod
    def _two_ends(cls, v: list[str]) -> list[str]:
        if len(v) != 2:
            raise ValueError(f"a cable has two ends, this one lists {len(v)}")
        return v


def _cable_form(v: Any) -> Any:
    return {"ends": v} if isinstance(v, list) else v


class Instance(Strict):
    hosts: Annotated[list[Name], Field(min_length=1)]
    tp: Annotated[int, Field(ge=1)]
    launcher: str | None = None
    head: Name | None = None
    backend: Literal["mp", "ray"] | None = None
    runtime: Literal["docker", "process"] | None = None
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    flags: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class Sparkfab(Strict):
    cluster: ClusterName
    link_speed: Annotated[LinkSpeed, BeforeValidator(_as_str)] = "200"
    mtu: Mtu = 9000
    subnet_pool: ipaddress.IPv4Network = ipaddress.IPv4Network("192.168.96.0/20")
    rail_prefix: Annotated[int, Field(ge=8, le=30)] = 24
    control_plane: Literal["management", "fabric"] = "management"
    nccl_version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+$")] = "2.30.7"
    nccl_graph: bool | None = None  # default: on for switchless rings (the 4-ring write-up's recipe)
    nccl_channels: Annotated[int, Field(ge=1, le=64)] = 8
    master_port: Annotated[int, Field(ge=1, le=65535)] = 29501
    netplan_renderer: Literal["networkd", "NetworkManager"] = "networkd"
    switches: dict[Name, Switch] = Field(default_factory=dict)
    cables: list[Annotated[Cable, BeforeValidator(_cable_form)]] = Field(default_factory=list)
    instances: dict[Name, Instance] = Field(default_factory=dict)


class Inventory(Strict):
    hosts: dict[Name, HostVars]
    sparkfab: Sparkfab
    group_vars: dict[str, Any] = Field(default_factory=dict)
    source: str = ""


# ---------------------------------------------------------------------------- loading

_TOP_KEYS = ("all",)
_ALL_KEYS = ("hosts", "vars", "children")


def load(path: str | Path) -> tuple[Inventory, Any]:
    """Load and structurally validate an inventory; return it with the raw YAML tree."""
    raw = load_raw(path)
    return parse(raw, str(path)), raw


def load_raw(path: str | Path) -> Any:
    """The YAML tree with line information (ruamel round-trip)."""
    path = Path(path)
    try:
        raw = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InventoryError([Problem("(file)", f"no such file: {path}")], str(path)) from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = Problem("(file)", f"not valid YAML: {getattr(exc, 'problem', exc)}", line=line)
        raise InventoryError([problem], str(path)) from None
    return raw


def parse(raw: Any, source: str = "") -> Inventory:
    inv, problems = parse_partial(raw, source)
    if problems or inv is None:
        raise InventoryError(problems, source)
    return inv


def parse_partial(raw: Any, source: str = "") -> tuple[Inventory | None, list[Problem]]:
    """Structural validation. On errors in keys that have defaults (or unknown keys), the
    model is repaired by dropping them so that the semantic checks can still run and the
    user sees every problem in one go."""
    problems: list[Problem] = []
    if not isinstance(raw, dict) or not isinstance(raw.get("all"), dict):
        hint = "an inventory starts with 'all:' holding 'hosts:' and 'vars: {sparkfab: ...}'"
        raise InventoryError([Problem("(top)", "no 'all' group", hint)], source)
    problems += _unknown(raw, (), _TOP_KEYS, raw)
    group = raw["all"]
    problems += _unknown(group, ("all",), _ALL_KEYS, raw)
    hosts_raw = group.get("hosts") or {}
    block = (group.get("vars") or {}).get("sparkfab")
    if block is None:
        problems.append(
            Problem(
                "all.vars",
                "no 'sparkfab' block",
                "put the cluster under all.vars.sparkfab",
                _line(raw, ("all", "vars")),
            )
        )
        raise InventoryError(problems, source)
    hosts, ansible = _split_host_vars(hosts_raw)
    others = {k: v for k, v in (group.get("vars") or {}).items() if k != "sparkfab"}
    for key in [k for k in others if str(k).startswith("sparkfab_")]:
        problems.append(
            Problem(
                f"all.vars.{key}",
                "reserved: sparkfab writes the sparkfab_* variables of its rendered inventory itself",
                "remove it; lab behaviour comes only from `--lab` or the inventory `sparkfab lab up` wrote",
                _line(raw, ("all", "vars", key)),
            )
        )
        del others[key]
    data = _plain({"hosts": hosts, "sparkfab": block, "group_vars": others, "source": source})
    inv = None
    for attempt in range(4):
        try:
            inv = Inventory.model_validate(data)
            break
        except ValidationError as exc:
            if attempt == 0:
                problems += [_from_pydantic(err, raw) for err in exc.errors()]
            if not _repair(data, exc.errors()):
                return None, problems
    if inv is None:
        return None, problems
    merged = {h: v.model_copy(update={"ansible": ansible.get(h, {})}) for h, v in inv.hosts.items()}
    return inv.model_copy(update={"hosts": merged}), problems


def _repair(data: dict[str, Any], errors: list[Any]) -> bool:
    """Drop every key an error points at if the model can do without it."""
    for err in errors:
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        parent = walk(data, tuple(loc[:-1]))
        key = loc[-1] if loc else None
        model = _model_at(tuple(err["loc"][:-1]))
        optional = model is not None and key in model.model_fields and not model.model_fields[str(key)].is_required()
        if isinstance(parent, dict) and key in parent and (err["type"] == "extra_forbidden" or optional):
            del parent[key]
        else:
            return False
    return True


def _split_host_vars(hosts_raw: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Separate Ansible's own `ansible_*` host keys from the ones sparkfab validates."""
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
        ours[str(name)] = {k: v for k, v in hv.items() if k not in theirs[str(name)]}
    return ours, theirs


def _plain(v: Any) -> Any:
    """ruamel's commented containers -> plain dicts and lists."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _unknown(node: Any, path: tuple[Any, ...], allowed: tuple[str, ...], raw: Any) -> list[Problem]:
    return [
        Problem(_path_text(path + (k,)), f"unknown key '{k}'", _did_you_mean(str(k), allowed), _line(raw, path + (k,)))
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
        return ("all", "hosts", *rest)
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
        if isinstance(part, str) and part.startswith("function-"):
            out.pop()
        i += 1
    return tuple(p for p in out if not (isinstance(p, str) and "[" in p))


def _from_pydantic(err: Any, raw: Any) -> Problem:
    loc = _raw_loc(tuple(err["loc"]), raw)
    kind = err["type"]
    key = loc[-1] if loc else ""
    if kind == "extra_forbidden":
        model = _model_at(tuple(err["loc"][:-1]))
        fields = model.model_fields.keys() if model else ()
        return Problem(_path_text(loc), f"unknown key '{key}'", _did_you_mean(str(key), fields), _line(raw, loc))
    msg = _message(err)
    return Problem(_path_text(loc), msg, _hint_for(key, kind), _line(raw, loc))


def _message(err: Any) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "required key is missing"
    if kind in ("greater_than_equal", "less_than_equal") and err["loc"][-1] == "mtu":
        return f"MTU {value} is outside 1280-9216"
    if kind == "literal_error":
        return f"'{value}' is not one of {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        return f"'{value}' is not a valid {err['loc'][-1] if isinstance(err['loc'][-1], str) else 'value'}"
    text = str(err["msg"]).removeprefix("Value error, ")
    return f"{text} (got {value!r})" if not isinstance(value, dict | list) else text


_HINTS = {
    "mtu": "jumbo frames on the fabric use 9000; both ends of a rail must match",
    "link_speed": "200 (both PCIe roots), 100e (one root: emulated 100 Gb/s) or 100 (100G breakout)",
    "cluster": "lower-case letters, digits and '-', at most 20 characters (it prefixes lab names)",
    "ends": "write a cable as [spark-a:p0, spark-b:p1] or [spark-a:p1, sw1:2/1]",
}


def _hint_for(key: Any, kind: str) -> str:
    if kind == "missing" and key == "cluster":
        return "name the cluster, e.g. 'cluster: ring4'"
    return _HINTS.get(str(key), "")


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Inventory
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int) or (isinstance(part, str) and part.startswith("function-")):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            # a dict key (host name, switch name, instance name): keep the value model
            continue
        model = _inner_model(field.annotation)
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found:
            return found
    meta = getattr(annotation, "__origin__", None)
    return _inner_model(meta) if meta is not None and meta is not annotation else None


def _path_text(path: tuple[Any, ...]) -> str:
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


def _line(raw: Any, path: tuple[Any, ...]) -> int | None:
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


def line_of(raw: Any, path: tuple[Any, ...]) -> int | None:
    return _line(raw, path)


def path_text(path: tuple[Any, ...]) -> str:
    return _path_text(path)


_SUFFIX = re.compile(r"^(.*):([^:]+)$")


def split_end(end: str) -> tuple[str, str]:
    m = _SUFFIX.match(end)
    assert m is not None  # guaranteed by EndRef
    return m.group(1), m.group(2)
