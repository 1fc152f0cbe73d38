"""What discover found, written as an inventory: merged into the user's (comments, keys and
subnets kept; with a --limit, the other Sparks' cables as written) or a new one, and what
`validate` would refuse in it (discover never writes an inventory validate refuses behind an
exit status of 0)."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from sparkfab.discover import Discovery
from sparkfab.spark import LinkSpeed
from sparkfab.switches import catalog, profiles


def merge(raw_text: str | None, result: Discovery, cluster: str, asked: set[str] | None = None) -> str:
    """Write the cables into an existing inventory (comments and other keys kept) or a new one.
    With `asked` (a --limit: the Sparks discovered), the cables of the other Sparks are kept as
    they were, and those of the Sparks asked stay where they were in the list when found again
    (the ranks follow the cables' order), the new ones after them."""
    yaml = YAML(typ="rt")
    yaml.width = 4096
    if raw_text is None:
        data = yaml.load(_new_inventory(result, cluster))
    else:
        data = yaml.load(raw_text)
    sf = data["all"]["vars"]["sparkfab"]
    written = sf.get("cables") or []
    old = {frozenset(_cable_ends(c)): i for i, c in enumerate(written)}  # -> its index
    picks: list[tuple[Any, int | None]]  # (cable, its index in the written list: its comment goes along)
    if asked is None:
        picks = [
            (written[old[k]], old[k]) if k in old else (_flow(c), None) for c in result.cables for k in [frozenset(c)]
        ]
    else:
        found = {frozenset(c): c for c in result.cables}
        picks = [(written[i], i) for k, i in old.items() if not ({e.split(":")[0] for e in k} & asked) or k in found]
        picks += [(_flow(c), None) for k, c in found.items() if k not in old]
    sf["cables"] = _seq(written, picks)
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def _seq(written: Any, picks: list[tuple[Any, int | None]]) -> Any:
    """The cables as a new list, each taken from the written one with the comment on its line."""
    from ruamel.yaml.comments import CommentedSeq

    out = CommentedSeq(c for c, _ in picks)
    notes = getattr(getattr(written, "ca", None), "items", {})
    for j, (_, i) in enumerate(picks):
        if i is not None and i in notes:
            out.ca.items[j] = notes[i]
    return out


def _cable_ends(c: Any) -> list[str]:
    return [str(x) for x in (c["ends"] if isinstance(c, dict) else c)]


def _flow(cable: list[str]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(cable)
    seq.fa.set_flow_style()
    return seq


def _new_inventory(result: Discovery, cluster: str) -> str:
    hosts = {v.label: {"ansible_host": v.address} for v in result.hosts.values() if not v.error}
    sparks = list(hosts)
    data: dict[str, Any] = {"cluster": cluster, "link_speed": _speed_value(result.mode), "mtu": 9000, "cables": []}
    if result.switches:
        data["switches"] = {k: _switch_entry(sw) for k, sw in sorted(result.switches.items())}
    if len(sparks) > 1:
        data["instances"] = {"main": {"hosts": sparks, "tp": len(sparks)}}
    doc = {"all": {"hosts": hosts, "vars": {"sparkfab": data}}}
    import yaml as pyyaml

    body = pyyaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=4096)
    return "# yaml-language-server: $schema=./schema.json\n# written by `sparkfab discover`\n" + body


def _speed_value(mode: LinkSpeed) -> int | str:
    return int(mode) if mode.isdigit() else mode


def _switch_entry(sw: profiles.KnownSwitch) -> dict[str, Any]:
    """A new inventory's entry for a switch discover placed ports on."""
    if sw.model.name in catalog.MODELS:
        entry: dict[str, Any] = {"model": sw.model.name}
    else:
        entry = {"model": "generic", "ports": sw.model.port_count}
    if sw.os != profiles.MODEL_OS.get(sw.model.name):
        entry["os"] = sw.os
    return entry


def problems(text: str) -> list[str]:
    """What `validate` would refuse in an inventory discover wrote (empty: it is valid)."""
    import tempfile
    from pathlib import Path

    from sparkfab.errors import InventoryError
    from sparkfab.resolve import load_plan

    with tempfile.TemporaryDirectory(prefix="sparkfab-discover-") as d:
        path = Path(d) / "discovered.yml"
        path.write_text(text)
        try:
            load_plan(str(path))
        except InventoryError as exc:
            return [p.render("").strip() for p in exc.problems]
    return []
