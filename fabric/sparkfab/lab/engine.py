"""What a lab serves, and how fast its cables are.

Two engines:

- `vllm` (the default): vLLM's CPU build serving a model made at `lab up`, through the
  `lab-vllm` recipe, the `process` runtime and the same multi-node flags a Spark gets. The
  virtual environment that holds it (`.venv-vllm`, made by `scripts/setup.sh`; another one with
  `SPARKFAB_VLLM_PYTHON`) is the lab's stand-in for the container image: `lab up` writes a
  `vllm` command into the lab directory that runs it, and the launch env puts it on PATH.
- `collective`: the torch.distributed all-reduce workload (seconds to start; for tests of the
  start order and of the Ansible path).

Link speed: on a Spark, 200 Gb/s uses both PCIe roots of a port and the emulated 100 Gb/s one
of them. A lab has no PCIe roots, so both modes become token-bucket rates of every fabric veth,
scaled down so that a small model on a small machine sees the same kind of difference.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path

from sparkfab import proc
from sparkfab.errors import LabError
from sparkfab.lab.spec import LabSpec
from sparkfab.launchers import recipe
from sparkfab.modelcheck import VOCAB_PADDING
from sparkfab.oracle import vllm_python
from sparkfab.spark import SPEEDS, LinkSpeed

ENGINES = ("vllm", "collective")
RECIPES = {"vllm": "lab-vllm", "collective": "lab-collective"}
#: A real link speed is this many times the lab's shaped rate.
SCALE = 500
#: link-speed mode -> the shaped rate of every fabric veth, Mbit/s: the rate the mode stands for
#: (100e: 100 Gb/s, an exact half of 200, not the 109 Gb/s one root measured), divided by SCALE
RATE_MBIT: dict[LinkSpeed, int] = {m: round(s.nominal_gbps * 1000 / SCALE) for m, s in SPEEDS.items()}
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


def served_name(spec: LabSpec) -> str:
    """The model name the lab's vLLM answers to (the recipe's --served-model-name, else its path)."""
    name = recipe(RECIPES["vllm"]).flags.get("served-model-name")
    return str(name) if name else str(model_dir(spec))


def rate_text(mode: LinkSpeed) -> str:
    """How the lab shapes `mode`, for output: '400 Mbit/s (200 Gb/s at 1:500)'."""
    return f"{RATE_MBIT[mode]} Mbit/s ({SPEEDS[mode].text} at 1:{SCALE})"


def rate_gbps(mode: LinkSpeed) -> float:
    return RATE_MBIT[mode] / 1000


def check(engine: str) -> None:
    if engine not in ENGINES:
        raise LabError(f"unknown lab engine {engine!r}: {' or '.join(ENGINES)}")
    if engine == "vllm" and not vllm_python().exists():
        raise LabError(
            f"the lab serves vLLM's CPU build from {vllm_python()}, which does not exist: run scripts/setup.sh "
            "(or name another Python with SPARKFAB_VLLM_PYTHON), or use `lab up --engine collective`"
        )


def bin_dir(spec: LabSpec) -> Path:
    return spec.dir / "image" / "bin"


def model_dir(spec: LabSpec) -> Path:
    return spec.dir / "model"


def install(spec: LabSpec, engine: str, tps: set[int]) -> None:
    """Write the `vllm` command and the model (shaped for the instances' TP sizes) into the lab
    directory (vllm engine only)."""
    if engine != "vllm":
        return
    py = vllm_python()
    bd = bin_dir(spec)
    bd.mkdir(parents=True, exist_ok=True)
    (bd / "vllm").write_text(
        "#!/bin/sh\n# sparkfab lab: the `vllm` of the lab's image (vLLM's CPU build in a virtual environment)\n"
        f'VLLM_TARGET_DEVICE=cpu exec {shlex.quote(str(py))} -m vllm.entrypoints.cli.main "$@"\n'
    )
    os.chmod(bd / "vllm", 0o755)
    ray = py.parent / "ray"
    if ray.exists():  # Ray's own CLI, for recipes that start the engine on a Ray cluster
        (bd / "ray").write_text(
            f'#!/bin/sh\n# sparkfab lab: the `ray` of the lab\'s image\nexec {shlex.quote(str(ray))} "$@"\n'
        )
        os.chmod(bd / "ray", 0o755)
    script = Path(__file__).with_name("model.py")
    args = [str(py), str(script), str(model_dir(spec))]
    for key, value in model_shape(tps).items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    res = proc.run(args, check=False, timeout=600)
    if res.returncode != 0:
        raise LabError(f"making the lab's model failed: {(res.stderr or res.stdout).strip()[-800:]}")


def instance_env(spec: LabSpec, engine: str, python: str) -> dict[str, str]:
    """Env every lab instance gets: the Python of the collective workload (verify --collective
    runs it with either engine) and, for vLLM, the lab image's command on PATH."""
    env = {"SPARKFAB_PYTHON": python}
    if engine == "vllm":
        env["PATH"] = f"{bin_dir(spec)}:{_PATH}"
    return env
