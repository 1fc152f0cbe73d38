"""Launch recipes (`launchers/*.yml`): engine, image, model, serve flags and env for a
model and topology. Kept at the top of the repository beside the Ansible content; an installed
wheel carries a copy of both (`repo_dir`)."""

from __future__ import annotations

import re
from functools import cache
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
    model_validator,
)

from sparkfab import engines
from sparkfab.engines.base import Engine, Runtime
from sparkfab.errors import RenderError, SparkfabError
from sparkfab.files import userfile, yamlload
from sparkfab.paths import repo_dir

#: A Hugging Face id (org/name) or an absolute path inside the container.
MODEL = re.compile(r"^(/[^\s]+|[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)$")
#: repository[:tag][@sha256:digest], as docker reads an image reference
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?\Z")
#: the API server's own start after the engine is ready (tokenizer, routes), with room
API_START_S = 120
#: the host's root-only KEY=VALUE file the secrets come from (apply writes it; never rendered)
SECRETS_FILE = "/etc/sparkfab/secrets.env"
_SECRET_NAME = re.compile(r"(^|_)(TOKEN|API_KEY|ACCESS_KEY|SECRET|SECRET_KEY|PASSWORD|PASSWD|CREDENTIALS)\Z")


def is_secret_name(name: str) -> bool:
    """An environment name that by convention holds a secret (HF_TOKEN, WANDB_API_KEY,
    AWS_SECRET_ACCESS_KEY, ...)."""
    return bool(_SECRET_NAME.search(name.upper()))


def _line(v: Any) -> Any:
    """Numbers as YAML wrote them become text; nothing else is coerced."""
    return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v


#: one line of text: no line break, NUL or other control character an env file or a shell line breaks on
_ONE_LINE = r"^[^\x00-\x1f\x7f]*$"
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
EnvValue = Annotated[str, StringConstraints(pattern=_ONE_LINE, max_length=4096), BeforeValidator(_line)]
FlagName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
#: docker's -v: SOURCE:TARGET[:OPTIONS], an absolute target, no spaces or control characters
Volume = Annotated[str, StringConstraints(pattern=r"^[^\s:,]+:/[^\s:,]*(:[a-zA-Z,]+)?$", max_length=4096)]


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    #: the file it was read from
    source: str = ""
    description: str
    #: the serving engine by its name in `sparkfab.engines` (vllm, sglang, collective)
    engine: str = "vllm"
    image: str = ""
    #: the image's own ENTRYPOINT up to the command (`docker image inspect`): vllm/vllm-openai has
    #: [vllm, serve]; NGC's nvidia_entrypoint.sh runs its arguments as given, so [] for it
    entrypoint: list[Annotated[str, StringConstraints(pattern=_ONE_LINE, min_length=1)]] = Field(default_factory=list)
    #: how to make the image when no registry has it (a locally built tag)
    build: str = ""
    model: str = ""
    backend: Literal["mp", "ray"] = "mp"
    #: what carries the tensor-parallel all-reduces: NCCL over RDMA (a GPU build), or Gloo over
    #: TCP (vLLM's CPU build, the lab's engine): then the launch env names the fabric netdev and
    #: address that carry them (GLOO_SOCKET_IFNAME, VLLM_HOST_IP, --master-addr)
    tp_backend: Literal["nccl", "gloo"] = "nccl"
    flags: dict[FlagName, str | int | float | bool | None] = Field(default_factory=dict)
    #: the instance's rules: names and values both docker's --env-file and a shell read literally
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    volumes: list[Volume] = Field(default_factory=lambda: ["/root/.cache/huggingface:/root/.cache/huggingface"])
    #: docker's --shm-size: a number with an optional unit (b, k, m, g)
    shm_size: Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,12}[bkmgBKMG]?$")] = "64g"
    #: the vLLM release the image carries (its `vllm --version`), compared with the parser that
    #: checks the flags; empty when unknown
    engine_version: str = ""
    #: the NCCL release the image carries (torch.cuda.nccl.version() inside it), where known:
    #: render and validate warn when a switchless instance's is older than 2.30.7
    nccl_version: Annotated[str, StringConstraints(pattern=r"^([0-9]+\.[0-9]+\.[0-9]+)?$")] = ""
    #: the numbers of the checkpoint's config.json that tensor parallelism divides
    #: (num_attention_heads, num_key_value_heads, intermediate_size, vocab_size, ...), for a
    #: checkpoint that is not on this machine; or `config:`, a config.json beside the recipe
    architecture: dict[str, int] = Field(default_factory=dict)
    config: str = ""
    #: where `architecture` comes from when it is not the model's own published config.json
    #: (validate says so: the TP it allows is only as right as these numbers)
    architecture_unverified: str = ""
    #: the `sparkfab fit` preset of the recipe's model (its published config: sizes, attention
    #: and weight format), which validate sizes the recipe's memory settings with when the
    #: checkpoint is not on this machine
    fit: str = ""
    #: how long `serve` waits for rank 0's health (default: the engine's own start-up timeout,
    #: VLLM_ENGINE_READY_TIMEOUT_S or vLLM's 600 s, plus the API server's start)
    health_wait_s: int | None = None

    @property
    def engine_spec(self) -> Engine:
        """What the engine is to sparkfab (its argv, flags, probes), from the engine seam."""
        return engines.engine(self.engine)

    @property
    def default_runtime(self) -> Runtime:
        """Where the engine runs unless the instance says (an image's engine in its container)."""
        return self.engine_spec.default_runtime

    @property
    def ready_timeout_s(self) -> int:
        """How long the engine itself waits for its workers before it gives up (its own bound)."""
        return self.engine_spec.ready_timeout_s(self.env)

    @property
    def health_wait(self) -> int:
        return self.health_wait_s or self.ready_timeout_s + API_START_S

    def declared_config(self) -> tuple[dict[str, Any], str] | None:
        """The architecture the recipe declares for its own model, and where it says so."""
        if self.config:
            path = Path(self.source).parent / self.config
            try:
                data = userfile.read_json(path, "config.json")
            except (OSError, SparkfabError) as exc:
                raise ValueError(f"config {self.config}: {exc}") from None
            return (data, str(path)) if isinstance(data, dict) else None
        return (dict(self.architecture), f"recipe {self.name}'s architecture") if self.architecture else None

    def notes(self) -> list[str]:
        """What validate says of the recipe itself: numbers it declares without the model's own
        config, and settings its engine is known to ignore."""
        out = []
        if self.architecture and self.architecture_unverified:
            out.append(
                f"recipe {self.name}'s architecture is not its model's published config ("
                f"{self.architecture_unverified}): the TP it is checked against may be wrong; put the "
                "checkpoint's config.json beside the recipe (`config:`) to check the real one"
            )
        return out + [f"recipe {self.name} {why}" for why in self.engine_spec.ignored(self.flags)]

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, name: str) -> str:
        engines.engine(name)  # a ValueError that names the engines there are
        return name

    @model_validator(mode="after")
    def _servable(self) -> Recipe:
        if not self.engine_spec.needs_image:
            return self
        if not IMAGE.fullmatch(self.image) or "@" in self.image.split(":")[0]:
            raise ValueError(f"image {self.image!r} is not an image reference")
        tagged = "@sha256:" in self.image or ":" in self.image.rsplit("/", 1)[-1]
        if not self.build and (not tagged or self.image.endswith(":latest")):
            raise ValueError(f"image {self.image!r}: pin a tag or digest (every rank must run the same image)")
        if not MODEL.fullmatch(self.model):
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
                data = yamlload.parse(yamlload.read_text(path, "recipe")) or {}
            except yamlload.YamlProblem as exc:
                raise RenderError(f"{path}{f':{exc.line}' if exc.line else ''}: {exc.message}") from None
            if not isinstance(data, dict):
                raise RenderError(f"{path}: a recipe is a mapping of engine, image, model, flags, env")
            if {"name", "source"} & set(data):
                raise RenderError(f"{path}: 'name' and 'source' come from the file's name and place; remove them")
            try:
                out[path.stem] = Recipe(name=path.stem, source=str(path), **data)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = "".join(f"{x}: " for x in (".".join(str(x) for x in first["loc"]),) if x)
                raise RenderError(f"{path}: {where}{_why(first)}") from None
    return out


#: what a field must look like, for pydantic's pattern errors
_FORMS = {
    "shm_size": "a size such as 64g (digits, then b, k, m or g)",
    "env": "a variable name ([A-Za-z_][A-Za-z0-9_]*) with a value on one line",
    "flags": "an engine option name without its dashes (lower case, digits, '-')",
    "volumes": "SOURCE:/TARGET[:OPTIONS] without spaces",
    "entrypoint": "one word per item, on one line",
}


def _why(err: Any) -> str:
    """pydantic's error in the recipe's terms: the form a field takes instead of a regex."""
    if err["type"] == "string_pattern_mismatch":
        field = str(err["loc"][0]) if err["loc"] else ""
        return f"{str(err.get('input'))[:60]!r} is not {_FORMS.get(field, 'allowed here')}"
    return str(err["msg"]).removeprefix("Value error, ")


def recipe(name: str, dirs: tuple[Path, ...] | None = None) -> Recipe:
    try:
        return recipes(dirs)[name]
    except KeyError:
        where = ", ".join(str(d) for d in dirs or (repo_dir("launchers"),))
        raise RenderError(f"no launch recipe '{name}' in {where}") from None
