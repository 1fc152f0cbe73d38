"""`sparkfab fit`: which model fits how many Sparks, with what context and how many requests at
once, at which tensor- x pipeline-parallel layout, and what each layout sends per token.

`shape` reads a model's config.json as memory sees it; `plan` lays it out on Sparks; the presets
(`presets.json`) are published configs of the models Spark owners serve, each with its source."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from sparkfab.fit.shape import Shape, ShapeError, from_dict

PRESETS_FILE = Path(__file__).with_name("presets.json")


@cache
def presets() -> dict[str, tuple[Shape, str]]:
    """Preset name -> (its shape, where its figures come from); read once per process."""
    data = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    return {name: (from_dict(p["config"], name, p["source"]), p["source"]) for name, p in data.items()}


__all__ = ["Shape", "ShapeError", "from_dict", "presets"]
