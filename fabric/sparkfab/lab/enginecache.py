"""The lab engine's own cache, filled once at `lab up` with what every rank of a first start
would otherwise work out alike, side by side, on this machine's two cores.

vLLM inspects a model's class (which of its interfaces the class has) the first time a process
meets it, in a subprocess that imports vLLM, torch and the model's module, and keeps the answer
under `$VLLM_CACHE_ROOT/modelinfos`, keyed on the hash of the module's source
(`vllm/model_executor/models/registry.py`, `_LazyRegisteredModel.inspect_model_cls`). A Spark
does that once, on its own cores, at its first start. The lab's Sparks share this machine's
cores and one cache (`lab.image.COMPILE_CACHE`, kept across restarts and labs): at a lab's first
start every rank misses it at once, and four such subprocesses ran side by side, about 20 s of
`serve start` at TP4 (rank 0's log: 20 s between "non-default args" and "Resolved architecture";
the restart at 100e, which found the cache, spent none).

So, while the Sparks boot, `lab up` has the engine's oracle (its `check` on the lab's own model,
`assets/vllm_oracle.py`: the engine's own way to a model config, and so to the same inspection)
run once in the engine's environment, with the lab recipe's environment and the cache's path as
this machine sees it. It judges nothing here: its verdict is not read, and where it fails or is
slow the first start inspects as it would have (logged in the lab's `logs/engine-cache.log`).
A fill that ended well leaves a stamp in the cache, named by the engine's install and the
model's classes: a later lab with the same finds it and fills nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sparkfab import proc
from sparkfab.engines.recipes import recipe
from sparkfab.lab import image
from sparkfab.lab.serving import LabEngine
from sparkfab.lab.spec import LabSpec
from sparkfab.oracle import ASSETS, install_identity

log = logging.getLogger(__name__)

#: how long `lab up` waits at its end for a fill still running (it imports the engine twice:
#: 10-20 s on two cores beside the boots); past it the first start does the work instead
WAIT_S = 120.0


@dataclass
class Fill:
    proc: subprocess.Popen[bytes]
    log: Path
    stamp: Path
    started: float


def stamp(spec: LabSpec, engine: LabEngine) -> Path:
    """Where a fill for this install of the engine and the model's classes (its config's
    `architectures`: what the engine inspects, whatever the sizes a TP size gives the model)
    says that it ended well."""
    assert engine.engine.oracle is not None
    ident = install_identity(engine.python, engine.engine.oracle.dist)
    try:
        classes = json.loads((spec.paths.model / "config.json").read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        classes = None
    key = hashlib.sha256(json.dumps([ident, classes]).encode()).hexdigest()[:16]
    return image.compile_cache() / "filled" / f"{engine.name}-{key}"


def env(spec: LabSpec, engine: LabEngine) -> dict[str, str]:
    """The environment the lab's ranks run with (the lab recipe's and the lab build's), its
    paths inside a Spark under the lab's compile cache mapped to this machine's side of it."""
    inside, here = image.COMPILE_CACHE, str(image.compile_cache())
    ranks = {**recipe(engine.lab.recipe).env, **engine.lab.env}
    mapped = {k: here + v[len(inside) :] if v == inside or v.startswith(inside + "/") else v for k, v in ranks.items()}
    return {**os.environ, **mapped}


def start(spec: LabSpec, engine: LabEngine) -> Fill | None:
    """Start filling the cache for the lab's model (already written); None for an engine that
    serves no model or has no oracle, and where a fill of the same ended well before."""
    oracle = engine.engine.oracle
    if not engine.serves_model or oracle is None:
        return None
    done = stamp(spec, engine)
    if done.exists():
        return None
    model = str(spec.paths.model)
    request = {"launches": [{"argv": [*engine.engine.command, model], "model_dir": model}]}
    spec.paths.logs.mkdir(parents=True, exist_ok=True)
    out = spec.paths.logs / "engine-cache.log"
    image.compile_cache().mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        p = subprocess.Popen(
            [str(engine.python), str(ASSETS / oracle.asset), "check"],
            stdin=subprocess.PIPE,
            stdout=f,
            stderr=subprocess.STDOUT,
            env=env(spec, engine),
        )
    assert p.stdin is not None
    p.stdin.write(json.dumps(request).encode())
    p.stdin.close()
    return Fill(p, out, done, time.perf_counter())


def finish(fill: Fill | None, wait_s: float = WAIT_S) -> float | None:
    """Wait for the fill (at most `wait_s`); the seconds it took, or None where it did not end
    well (ended with a warning naming its log: the first start inspects instead)."""
    if fill is None:
        return None
    try:
        code = fill.proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        stop(fill)
        log.warning("the engine's cache was not filled within %.0f s (%s): its first start fills it", wait_s, fill.log)
        return None
    if code != 0:
        log.warning("filling the engine's cache failed (exit %d, %s): its first start fills it", code, fill.log)
        return None
    fill.stamp.parent.mkdir(parents=True, exist_ok=True)
    fill.stamp.touch()
    return time.perf_counter() - fill.started


def stop(fill: Fill | None) -> None:
    """End a fill still running (`lab up` failed meanwhile, or it ran past its wait): the oracle
    and the inspection it started."""
    if fill is None or fill.proc.poll() is not None:
        return
    proc.kill_tree(fill.proc.pid)
    fill.proc.wait()
