"""What a lab serves: an engine of the seam that says how the lab serves it (`Engine.lab`).

- An engine with a module of its own (vLLM, the default): its CPU build serving a model made at
  `lab up`, through the engine's lab recipe (`lab-vllm`), in the runtime a Spark uses (`docker`:
  the launch scripts a Spark runs) with the same multi-node flags. The recipe's image is the
  lab's container image (`lab.image.container_tar`), imported into every Spark's Docker at
  `lab up`; the engine's virtual environment (its oracle's: `.venv-vllm`, made by
  `scripts/setup.sh`, or the one its variable names), the Python it was made from, a command
  for it and the model are bound into each Spark and, by the lab's copy of the recipe (its
  `volumes:`), into the container: a 4 GB environment imported into every Spark's Docker would
  make `lab up` slow.
- One without (the collective): the torch.distributed all-reduce workload from the host's
  Python, as a process (seconds to start; for tests of the start order and of the Ansible path).

How fast the lab's cables are is `lab.rates`'s.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparkfab import engines, proc
from sparkfab.engines import Engine, LabServing
from sparkfab.engines.recipes import recipe
from sparkfab.errors import LabError
from sparkfab.lab.spec import LabSpec
from sparkfab.modelcheck import VOCAB_PADDING
from sparkfab.oracle import engine_python
from sparkfab.paths import repo_dir

#: what `lab up --engine` takes, the default first
ENGINES = tuple(e.name for e in engines.in_lab())
#: The lab's model: big enough that its all-reduces are measurable on a shaped link (10 KB per
#: prompt token per rank at TP2), small enough for four ranks on a 2-core, 24 GB machine. Heads
#: of 64 values (vLLM's CPU attention takes no smaller); `model_shape` grows the head count for
#: a TP size that does not divide 16.
HEAD_DIM, HEADS, KV_HEADS, LAYERS, TOKENIZER_VOCAB = 64, 16, 4, 2, 400


def model_shape(tps: set[int]) -> dict[str, int]:
    """The lab model's sizes such that vLLM can split it at every TP size in `tps`: heads (and
    with them the hidden and intermediate sizes) a multiple of each, key/value heads that each
    TP size divides or is divided by, and a vocabulary whose 64-padding divides too."""
    step = math.lcm(*tps) if tps else 1
    heads = -(-HEADS // step) * step
    kv = next(d for d in range(KV_HEADS, 0, -1) if heads % d == 0 and all(t % d == 0 or d % t == 0 for t in tps))
    padded = -(-TOKENIZER_VOCAB // VOCAB_PADDING) * VOCAB_PADDING
    pad = math.lcm(VOCAB_PADDING, step)
    vocab = TOKENIZER_VOCAB if padded % step == 0 else -(-TOKENIZER_VOCAB // pad) * pad
    return {"hidden": heads * HEAD_DIM, "heads": heads, "kv_heads": kv, "layers": LAYERS, "vocab": vocab}


_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class LabEngine:
    """An engine as the lab serves it, resolved once from its name (`lab up --engine`, or the
    name a lab's state keeps) and carried as this object: its description (`engine`) and how the
    lab serves it (`lab`)."""

    engine: Engine
    lab: LabServing

    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def serves_model(self) -> bool:
        """An engine of its own, with a model (else the collective, from the host's Python)."""
        return self.lab.module is not None

    @property
    def python(self) -> Path:
        """The Python of the environment the lab serves it from (its oracle's)."""
        py = engine_python(self.engine)
        assert py is not None, f"{self.name}: an engine the lab serves from an environment names it (its oracle)"
        return py

    def backend(self, planned: str | None, keep: bool = False) -> str | None:
        """The backend the lab serves an instance planned on `planned` with: the planned one where
        the lab's build serves with it (or `keep`: `lab up --keep-ray`, to rehearse Ray's start
        order up to the engine's own refusal), else the build's own."""
        own = self.lab.backends
        if keep or not planned or not own or planned in own:
            return planned
        return own[0]

    def served_name(self, spec: LabSpec) -> str | None:
        """The model name the lab's engine answers to (its lab recipe's served-model flag, else
        the model's path); None for an engine that serves no model."""
        if not self.serves_model:
            return None
        name = recipe(self.lab.recipe).flags.get(self.lab.served_name_flag)
        return str(name) if name else str(spec.paths.model)

    def check_installed(self) -> None:
        """Refuse, with the way out, an engine whose environment is not on this machine."""
        if self.serves_model and not self.python.exists():
            other = next(x for x in ENGINES if not of(x).serves_model)
            assert self.engine.oracle is not None
            raise LabError(
                f"the lab serves {self.engine.title}'s CPU build from {self.python}, which does not exist: run "
                f"scripts/setup.sh (or name another Python with {self.engine.oracle.python_env}), "
                f"or use `lab up --engine {other}`"
            )

    def instance_env(self, spec: LabSpec, python: str) -> dict[str, str]:
        """Env every lab instance gets: the Python of the collective workload (verify
        --collective runs it with either engine) and, for an engine that serves a model, the lab
        image's commands on PATH."""
        env = {"SPARKFAB_PYTHON": python}
        if self.serves_model:
            env["PATH"] = f"{spec.paths.bin}:{_PATH}"
        return env


def of(name: str) -> LabEngine:
    """The lab engine of this name (one of `ENGINES`), refused by name otherwise."""
    if name not in ENGINES:
        raise LabError(f"unknown lab engine {name!r}: {' or '.join(ENGINES)}")
    engine = engines.engine(name)
    assert engine.lab is not None  # ENGINES are the engines with a `lab`
    return LabEngine(engine, engine.lab)


#: where the lab's model is inside a lab Spark and its containers (the lab-vllm recipe's `model`)
LAB_MODEL = "/var/lib/sparkfab/lab-model"


def install(spec: LabSpec, engine: LabEngine, tps: set[int]) -> list[tuple[Path, str]]:
    """Write the engine's command and the model (shaped for the instances' TP sizes) into the
    lab directory (an engine that serves a model only); return what every lab Spark binds
    read-only for it, besides the host's Python environments (`lab.machine.host_paths`)."""
    if not engine.serves_model:
        return []
    lab, e = engine.lab, engine.engine
    py = engine.python
    bd = spec.paths.bin
    bd.mkdir(parents=True, exist_ok=True)
    command = bd / e.command[0]
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in lab.env.items())
    command.write_text(
        f"#!/bin/sh\n# sparkfab lab: the `{e.command[0]}` of the lab's image ({e.title}'s CPU build in a virtual "
        f'environment)\n{env}exec {shlex.quote(str(py))} -m {lab.module} "$@"\n'
    )
    os.chmod(command, 0o755)
    ray = py.parent / "ray"
    if ray.exists():  # Ray's own CLI, for recipes that start the engine on a Ray cluster
        (bd / "ray").write_text(
            f'#!/bin/sh\n# sparkfab lab: the `ray` of the lab\'s image\nexec {shlex.quote(str(ray))} "$@"\n'
        )
        os.chmod(bd / "ray", 0o755)
    script = Path(__file__).with_name("model.py")
    args = [str(py), str(script), str(spec.paths.model)]
    for key, value in model_shape(tps).items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    res = proc.run(args, check=False, timeout=600)
    if res.returncode != 0:
        raise LabError(f"making the lab's model failed: {(res.stderr or res.stdout).strip()[-800:]}")
    (bd / "python3").unlink(missing_ok=True)
    (bd / "python3").symlink_to(py)  # the image's python3: torch for `verify --collective` in a container
    return [(bd, str(bd)), (spec.paths.model, LAB_MODEL)]


def recipe_text(spec: LabSpec, engine: LabEngine) -> str:
    """The lab's copy of the engine's lab recipe: sparkfab's, with the volumes that bring the
    engine's environment, its Python, its command and the model into the container (their paths
    are this machine's), and the lab's compile cache, writable."""
    from sparkfab.lab import image
    from sparkfab.lab.machine import host_paths

    name = engine.lab.recipe
    data = yaml.safe_load((repo_dir("launchers") / f"{name}.yml").read_text())
    binds = ("/usr", *host_paths(), spec.paths.bin, LAB_MODEL)  # the machine's userland, then the engine's
    data["volumes"] = [f"{p}:{p}:ro" for p in binds] + [f"{image.COMPILE_CACHE}:{image.COMPILE_CACHE}"]
    head = f"# sparkfab lab {spec.cluster}: {name} with the volumes of this machine's {engine.name} (generated)\n"
    return head + yaml.safe_dump(data, sort_keys=False, width=200)


def load_image(spec: LabSpec, machines: list[Any], engine: LabEngine) -> None:
    """The lab's container image into every Spark's Docker under the recipe's image name (loaded
    from one archive: the same image ID on every rank, which verify and preflight compare)."""
    import concurrent.futures as cf

    from sparkfab.lab import image, machine

    tar = image.container_tar(recipe(engine.lab.recipe).image)

    def one(m: Any) -> None:
        enter = ["nsenter", "-t", str(machine.init_pid(m)), "-a"]
        errors = []
        for _ in range(2):  # a Docker that restarted under the load removes the layer it was writing
            _until_docker(m.node.name, enter)
            with open(tar, "rb") as f:
                res = subprocess.run([*enter, "docker", "load", "-q"], stdin=f, capture_output=True, timeout=600)
            if res.returncode == 0:
                return
            errors.append(res.stderr.decode(errors="replace").strip()[-300:])
        raise LabError(f"{m.node.name}: docker load of the lab image failed twice: {' / '.join(errors)}")

    with cf.ThreadPoolExecutor(max_workers=len(machines) or 1) as pool:
        list(pool.map(one, machines))


def _until_docker(name: str, enter: list[str], seconds: float = 120) -> None:
    """Wait until the Spark's Docker answers twice in a row (socket-activated, it starts on the
    first request; on a loaded machine its first start can fail and systemd start it again,
    which cleans up what a load had begun)."""
    import time

    deadline, answered = time.monotonic() + seconds, 0
    while answered < 2:
        res = subprocess.run([*enter, "docker", "info", "-f", "{{.ID}}"], capture_output=True, timeout=60)
        answered = answered + 1 if res.returncode == 0 else 0
        if time.monotonic() > deadline:
            raise LabError(f"{name}: its Docker did not answer within {seconds:.0f} s: {res.stderr.decode()[-300:]}")
        if answered < 2:
            time.sleep(0.5)
