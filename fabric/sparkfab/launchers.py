"""Launch recipes (`launchers/*.yml`): engine, image, model, serve flags and env for a
model and topology. Kept at the top of the repository beside the Ansible content; an installed
wheel carries a copy of both (`repo_dir`)."""

from __future__ import annotations

import os
import re
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sparkfab.errors import RenderError


def repo_dir(name: str) -> Path:
    """Where the content beside the package lives (`launchers`, `roles`, `playbooks`,
    `ansible.cfg`): under SPARKFAB_HOME when it is set, else in the checkout sparkfab runs from
    (an editable install), else in the copy a built wheel carries (`sparkfab/_shipped`)."""
    home = os.environ.get("SPARKFAB_HOME")
    if home:
        return Path(home) / name
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.exists():
        return checkout
    return Path(str(resources.files("sparkfab"))) / "_shipped" / name


#: A Hugging Face id (org/name) or an absolute path inside the container.
MODEL = re.compile(r"^(/[^\s]+|[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)$")
#: repository[:tag][@sha256:digest], as docker reads an image reference
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$")
#: Secrets passed into every vLLM container by name (values only from the host's root-only file).
SECRETS = ("HF_TOKEN", "VLLM_API_KEY")


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    #: the file it was read from
    source: str = ""
    description: str
    engine: Literal["vllm", "collective"] = "vllm"
    image: str = ""
    #: the image's own ENTRYPOINT (`docker image inspect`): vllm/vllm-openai has [vllm, serve], NGC's none
    entrypoint: list[str] = Field(default_factory=list)
    #: how to make the image when no registry has it (a locally built tag)
    build: str = ""
    model: str = ""
    backend: Literal["mp", "ray"] = "mp"
    #: what carries the tensor-parallel all-reduces: NCCL over RDMA (a GPU build), or Gloo over
    #: TCP (vLLM's CPU build, the lab's engine): then the launch env names the fabric netdev and
    #: address that carry them (GLOO_SOCKET_IFNAME, VLLM_HOST_IP, --master-addr)
    tp_backend: Literal["nccl", "gloo"] = "nccl"
    flags: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    volumes: list[str] = Field(default_factory=lambda: ["/root/.cache/huggingface:/root/.cache/huggingface"])
    shm_size: str = "64g"

    @model_validator(mode="after")
    def _servable(self) -> Recipe:
        if self.engine != "vllm":
            return self
        if not IMAGE.match(self.image) or "@" in self.image.split(":")[0]:
            raise ValueError(f"image {self.image!r} is not an image reference")
        tagged = "@sha256:" in self.image or ":" in self.image.rsplit("/", 1)[-1]
        if not self.build and (not tagged or self.image.endswith(":latest")):
            raise ValueError(f"image {self.image!r}: pin a tag or digest (every rank must run the same image)")
        if not MODEL.match(self.model):
            raise ValueError(f"model {self.model!r}: a Hugging Face id (org/name) or an absolute path")
        return self


#: Where an inventory's own recipes live: a `launchers/` folder beside the inventory file.
USER_DIR = "launchers"


def search_path(inventory: str | Path | None) -> tuple[Path, ...]:
    """Recipe folders for an inventory: sparkfab's own, then the one beside the inventory (whose
    recipes add to sparkfab's and replace one of the same name)."""
    own = repo_dir("launchers")
    if inventory is None:
        return (own,)
    where = Path(inventory).resolve()
    mine = (where if where.is_dir() else where.parent) / USER_DIR
    return (own, mine) if mine.is_dir() and mine != own.resolve() else (own,)


@cache
def recipes(dirs: tuple[Path, ...] | None = None) -> dict[str, Recipe]:
    """Every recipe in `dirs` (default: sparkfab's own), later folders replacing earlier ones."""
    out = {}
    for folder in dirs or (repo_dir("launchers"),):
        for path in sorted(folder.glob("*.yml")):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as exc:
                raise RenderError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
            if not isinstance(data, dict):
                raise RenderError(f"{path}: a recipe is a mapping of engine, image, model, flags, env")
            if {"name", "source"} & set(data):
                raise RenderError(f"{path}: 'name' and 'source' come from the file's name and place; remove them")
            try:
                out[path.stem] = Recipe(name=path.stem, source=str(path), **data)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = "".join(f"{x}: " for x in (".".join(str(x) for x in first["loc"]),) if x)
                raise RenderError(f"{path}: {where}{str(first['msg']).removeprefix('Value error, ')}") from None
    return out


def recipe(name: str, dirs: tuple[Path, ...] | None = None) -> Recipe:
    try:
        return recipes(dirs)[name]
    except KeyError:
        where = ", ".join(str(d) for d in dirs or (repo_dir("launchers"),))
        raise RenderError(f"no launch recipe '{name}' in {where}") from None


FLAGS_FILE = "vllm-serve-flags.txt"


@lru_cache(maxsize=1)
def vllm_flags() -> frozenset[str]:
    """Every option string of `vllm serve` (both spellings of boolean flags), as the parser of
    the vLLM version in the file's header defines them (`scripts/vllm_parser.py` writes it)."""
    path = repo_dir("launchers") / FLAGS_FILE
    return frozenset(line.strip() for line in path.read_text().splitlines() if line.startswith("--"))


@lru_cache(maxsize=1)
def vllm_version() -> str:
    path = repo_dir("launchers") / FLAGS_FILE
    for line in path.read_text().splitlines():
        if line.startswith("# vllm "):
            return line.split()[2]
    return "(unknown version)"
