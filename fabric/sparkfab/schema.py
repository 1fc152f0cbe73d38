"""JSON Schema of the inventory, generated from the pydantic model (inventory/schema.json)."""

from __future__ import annotations

import json
from typing import Any

from sparkfab.inventory import HostVars, Sparkfab


def inventory_schema() -> dict[str, Any]:
    sf = Sparkfab.model_json_schema(ref_template="#/$defs/{model}")
    host = HostVars.model_json_schema(ref_template="#/$defs/{model}")
    host["properties"].pop("ansible", None)
    props = sf["properties"]
    # The model normalises these before validation; the schema accepts what users write.
    props["cables"]["items"] = {
        "anyOf": [
            {
                "type": "array",
                "items": {"type": "string", "pattern": r"^[^:\s]+:[^:\s]+$"},
                "minItems": 2,
                "maxItems": 2,
            },
            {"$ref": "#/$defs/Cable"},
        ]
    }
    props["link_speed"] = {"enum": [200, "200", "100e", 100, "100"], "default": "200", "title": "Link Speed"}
    host["patternProperties"] = {"^ansible_": {}}
    defs = {**sf.pop("$defs", {}), **host.pop("$defs", {}), "Sparkfab": sf, "HostVars": host}
    defs = _unblocked({k.removesuffix("Block"): v for k, v in defs.items()})
    host["additionalProperties"] = False
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "sparkfab inventory",
        "description": "An Ansible YAML inventory whose all.vars.sparkfab describes a DGX Spark cluster.",
        "type": "object",
        "required": ["all"],
        "properties": {
            "all": {
                "type": "object",
                "required": ["hosts", "vars"],
                "properties": {
                    "hosts": {"type": "object", "additionalProperties": {"$ref": "#/$defs/HostVars"}},
                    "vars": {
                        "type": "object",
                        "required": ["sparkfab"],
                        "properties": {"sparkfab": {"$ref": "#/$defs/Sparkfab"}},
                    },
                    "children": {"type": "object"},
                },
                "additionalProperties": False,
            }
        },
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


def _unblocked(node: Any) -> Any:
    """The schema with the model's `...Block` classes named as users know them (Switch, Cable,
    Instance, Exporter, PerfTools): what the inventory's blocks are called, whatever the class."""
    if isinstance(node, dict):
        return {k: _unblocked(v) for k, v in node.items()} | (
            {"$ref": node["$ref"].removesuffix("Block")} if isinstance(node.get("$ref"), str) else {}
        )
    if isinstance(node, list):
        return [_unblocked(v) for v in node]
    return node


def schema_text() -> str:
    return json.dumps(inventory_schema(), indent=2, sort_keys=True) + "\n"
