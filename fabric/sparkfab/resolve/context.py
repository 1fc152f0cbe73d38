"""What every stage of the resolver shares: the inventory being resolved, its raw YAML (for
line numbers) and the problems found so far."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkfab.engines.recipes import Recipe, recipes
from sparkfab.errors import Problem
from sparkfab.inventory import Inventory, line_of, path_text


@dataclass
class Ctx:
    inv: Inventory
    raw: Any
    problems: list[Problem] = field(default_factory=list)
    #: folders of launch recipes, sparkfab's own first (`engines.recipes.search_path`)
    recipe_dirs: tuple[Path, ...] | None = None
    #: instance -> why its TP size could not be checked against the model's architecture
    tp_unchecked: dict[str, str] = field(default_factory=dict)
    #: instance -> why its memory settings do not fit its Sparks (sparkfab.fit.check)
    memory: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def recipes(self) -> dict[str, Recipe]:
        return recipes(self.recipe_dirs)

    def add(self, path: tuple[Any, ...], message: str, hint: str = "") -> None:
        self.problems.append(Problem(path_text(path), message, hint, line_of(self.raw, path)))


SF = ("all", "vars", "sparkfab")


def close(word: str, known: list[str]) -> str:
    """A hint for a name that is not known: the closest known one, else the list."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else f"known: {', '.join(known)}"
