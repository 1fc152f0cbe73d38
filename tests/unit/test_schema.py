"""The inventory's JSON Schema (`schema`): the file editors read is what the model says, every
example passes it, and a typo is caught by jsonschema itself."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLES, REGEN, REPO


def test_schema_is_fresh():
    from sparkfab.schema import schema_text

    path = REPO / "inventory/schema.json"
    if REGEN:
        path.write_text(schema_text())
    assert path.read_text() == schema_text(), "stale: run `sparkfab schema -o inventory/schema.json`"


def test_schema_accepts_examples_and_rejects_typos():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    schema = json.loads((REPO / "inventory/schema.json").read_text())
    for path in EXAMPLES:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError, match="mtuu"):
        jsonschema.validate(yaml.safe_load((REPO / "tests/data/bad/typo-keys.yml").read_text()), schema)
