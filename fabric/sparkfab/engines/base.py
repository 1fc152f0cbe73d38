"""What an engine is to sparkfab: one typed description per engine, and what its argv is built from.

An engine says how its command line is made from a recipe and one rank of an instance, which of
its flags differ per rank, which sparkfab writes itself, which would carry a secret, the order its
ranks start in, where it runs by default, how it answers "ready", what its Prometheus histograms
are called, and which of its own parsers judges a launch. render, resolve, serve (through the
launch files' health URL), bench, the oracle and the lab ask this description; no module
outside `engines/` compares engine names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Runtime = Literal["docker", "process"]


@dataclass(frozen=True)
class RankArgs:
    """One rank's share of an instance, in the terms every engine's argv is made of (render fills
    it from the plan)."""

    model: str
    #: the recipe's flags, then the instance's, by name without dashes (true: the bare flag,
    #: false: its --no- form, None: left out)
    flags: Mapping[str, Any]
    tp: int
    nnodes: int
    rank: int
    backend: str  # mp or ray
    #: where the ranks meet (the head's address on the network their collectives use)
    dist_addr: str
    dist_port: int
    #: the head's address clients and health probes use, and the port it serves on
    http_addr: str
    port: int


@dataclass(frozen=True)
class Oracle:
    """The engine's own parser, run in the Python of an install of it (`assets/<asset>`)."""

    asset: str
    #: the environment variable that names that Python, and the checkout's venv used otherwise
    python_env: str
    venv: str
    #: the distribution whose version the verdicts depend on
    dist: str


@dataclass(frozen=True)
class Metrics:
    """How bench reads the engine's server: its version, and its histograms (seconds) by the
    names sparkfab records their means under."""

    #: GET path whose JSON answer has a "version"
    version_path: str
    histograms: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LabServing:
    """How the lab (one Linux machine without GPUs) serves an engine: the lab's recipe in
    `launchers/`, the runtime it runs in there (`docker`: the lab image in every Spark's Docker,
    as on a Spark), and the engine's command inside the lab image: `python -m module` of the
    engine's own environment (the oracle's), with `env`. Without a module the engine runs from
    the host's Python and serves no model."""

    recipe: str
    runtime: Runtime
    module: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: the recipe flag that names the model the lab's engine answers to
    served_name_flag: str = "served-model-name"
    #: the multi-node backends the lab's build serves with, the first for an instance planned on
    #: another (empty: whatever the instance is planned on)
    backends: tuple[str, ...] = ()


def flag_argv(flags: Mapping[str, Any]) -> list[str]:
    """Recipe flags as argv: true is the bare flag, false its --no- form, None left out. A value
    that begins with '-' is written `--key=value`: an argparse parser (vLLM's, SGLang's) then takes
    it as the value, never as a flag of its own (a value `--headless` would otherwise be one)."""
    out: list[str] = []
    for key, value in flags.items():
        if value is None:
            continue
        if value is True:
            out.append(f"--{key}")
        elif value is False:
            out.append(f"--no-{key}")
        elif str(value).startswith("-"):
            out.append(f"--{key}={value}")
        else:
            out += [f"--{key}", str(value)]
    return out


class Engine:
    """The defaults are those of an OpenAI-compatible server in a container image; each engine
    module overrides what differs."""

    def ignored(self, flags: Mapping[str, Any]) -> list[str]:
        """Settings among `flags` the engine takes and is known to ignore, each said as a clause
        ("sets X, which ... ignores: what happens instead"); none by default."""
        return []

    def memory_problems(self, shape: Any, tp: int, flags: Mapping[str, Any], on_disk: int | None) -> list[str]:
        """Why the engine's memory settings among `flags` cannot fit a model of `shape`
        (`sparkfab.fit.shape.Shape`) at TP `tp` on Sparks; none by default (not sized)."""
        return []

    #: the name recipes write (`engine:`)
    name: str = ""
    #: what the command line starts with (the oracle checks it, the docs show it)
    command: tuple[str, ...] = ()
    #: the engine as messages name it (vLLM)
    title: str = ""
    #: the server as messages name it (`vllm serve`)
    server: str = ""
    default_runtime: Runtime = "docker"
    #: a pinned image and a model are required (an engine that runs from the host's Python is not)
    needs_image: bool = True
    #: secrets every instance of this engine gets by name from the host's root-only file
    secrets: tuple[str, ...] = ()
    #: flags whose value is a secret -> the variable that carries it instead (None: the engine
    #: reads it from nowhere else)
    secret_flags: Mapping[str, str | None] = MappingProxyType({})
    #: flags sparkfab writes itself, and where their values come from
    generated_flags: Mapping[str, str] = MappingProxyType({})
    #: option strings that differ per rank by design, with a value and without one
    per_rank: tuple[str, ...] = ()
    per_rank_switches: tuple[str, ...] = ()
    #: the flag table in `launchers/` (written from the engine's own parser), if any
    flags_file: str | None = None
    oracle: Oracle | None = None
    #: GET path that answers 200 once the server takes requests
    health_path: str = "/health"
    #: an OpenAI-compatible server: `serve start` sends it one completion of one token (to the
    #: first model /v1/models lists) before it returns, so that every rank has run a forward
    #: pass and the first user's request does not pay for the engine's first one
    warms: bool = True
    #: the variable of the host's secrets file that holds the server's API key, which the warm-up
    #: sends as a bearer token where it is set (None: the server takes no key from there)
    api_key_env: str | None = None
    metrics: Metrics | None = None
    #: the variable that bounds the engine's own wait for its workers, and its default (s)
    ready_timeout_env: str | None = None
    ready_timeout_default_s: int = 600
    #: the variable that tells the engine which address is this host's (None: it finds out itself)
    host_ip_env: str | None = None
    #: the engine coordinates its ranks over Gloo on the CPU side: GLOO_SOCKET_IFNAME names the
    #: netdev of its rendezvous address (unset, Gloo picks the hostname's, often loopback)
    gloo_coordination: bool = False
    #: Ray backends: the head (rank 0) starts first and the workers join it
    ray: bool = False
    #: how the lab serves it (None: the lab cannot)
    lab: LabServing | None = None

    def argv(self, r: RankArgs) -> list[str]:
        raise NotImplementedError(f"engine {self.name} builds no argv")

    def start_order(self, rank: int, nnodes: int, backend: str) -> int:
        """The wave a rank starts in (0 first). By default the workers start first and wait for
        rank 0, which starts last; a single rank starts at once."""
        if nnodes == 1:
            return 0
        if self.ray and backend == "ray":
            return 0 if rank == 0 else 1
        return 1 if rank == 0 else 0

    def ready_timeout_s(self, env: Mapping[str, str]) -> int:
        """How long the engine itself waits for its workers before it gives up."""
        value = env.get(self.ready_timeout_env, "") if self.ready_timeout_env else ""
        return int(value) if value.isdigit() else self.ready_timeout_default_s

    def engine_flags(self, argv: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """The argv without what differs per rank by design: what must match on every rank."""
        out: list[str] = []
        skip = False
        for a in argv:
            if skip:
                skip = False
            elif a in self.per_rank:
                skip = True  # and its value
            elif a not in self.per_rank_switches:
                out.append(a)
        return tuple(out)
