"""Launch recipes (`launchers/*.yml`): engine, image, model, serve flags and env for a
model and topology. Kept beside the code, like the Ansible content (the repository is the
tool)."""

from __future__ import annotations

import os
from functools import cache, lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from sparkfab.errors import RenderError


def repo_dir(name: str) -> Path:
    root = Path(os.environ.get("SPARKFAB_HOME", Path(__file__).resolve().parents[2]))
    return root / name


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    engine: Literal["vllm", "collective"] = "vllm"
    image: str = ""
    model: str = ""
    backend: Literal["mp", "ray"] = "mp"
    flags: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    volumes: list[str] = Field(default_factory=lambda: ["/root/.cache/huggingface:/root/.cache/huggingface"])
    shm_size: str = "64g"


@cache
def recipes() -> dict[str, Recipe]:
    out = {}
    for path in sorted(repo_dir("launchers").glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out[path.stem] = Recipe(name=path.stem, **data)
    return out


def recipe(name: str) -> Recipe:
    try:
        return recipes()[name]
    except KeyError:
        raise RenderError(f"no launch recipe '{name}' in {repo_dir('launchers')}") from None


FLAGS_FILE = "vllm-serve-flags.txt"


@lru_cache(maxsize=1)
def vllm_flags() -> frozenset[str]:
    """Every option string of `vllm serve` (both spellings of boolean flags), as the parser of
    the vLLM version in the file's header defines them (`scripts/vllm_flags.py` writes it)."""
    path = repo_dir("launchers") / FLAGS_FILE
    return frozenset(line.strip() for line in path.read_text().splitlines() if line.startswith("--"))


@lru_cache(maxsize=1)
def vllm_version() -> str:
    path = repo_dir("launchers") / FLAGS_FILE
    for line in path.read_text().splitlines():
        if line.startswith("# vllm "):
            return line.split()[2]
    return "(unknown version)"
