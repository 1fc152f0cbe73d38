"""vLLM's own verdict on every launch, before a host runs it: the parser of `vllm serve` (with its
post-parse checks and the engine arguments it builds) on the whole argv each rank will execute,
and, where the checkpoint is on this machine, vLLM's model config checked against the
instance's tensor-parallel size.

It runs `assets/vllm_oracle.py` in the Python of a vLLM install: `SPARKFAB_VLLM_PYTHON`, else
the checkout's `.venv-vllm` (scripts/setup.sh makes it). vLLM takes seconds to import, so each
verdict is kept under `~/.cache/sparkfab/oracle`, keyed by what it depends on (that vLLM, the
argv, the checkpoint's config.json). Without a vLLM here, validate relies on the flag table
(`launchers.flag_value_problem`, already applied while resolving) and says that it did.
`SPARKFAB_ORACLE=off` turns the oracle off (the unit tests do).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkfab import modelcheck
from sparkfab.errors import InventoryError, Problem
from sparkfab.launchers import vllm_version
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import launch, volumes

#: the checkout sparkfab runs from, where scripts/setup.sh makes `.venv-vllm` (a wheel carries none)
_CHECKOUT = Path(__file__).resolve().parents[2]
ASSET = Path(__file__).with_name("assets") / "vllm_oracle.py"
TIMEOUT_S = 600


def vllm_python() -> Path:
    """The Python of the environment with vLLM (the CPU build here): SPARKFAB_VLLM_PYTHON, else the
    checkout's `.venv-vllm` (not `repo_dir`, which finds shipped content, never a venv)."""
    return Path(os.environ.get("SPARKFAB_VLLM_PYTHON") or _CHECKOUT / ".venv-vllm" / "bin" / "python")


def enabled() -> bool:
    return os.environ.get("SPARKFAB_ORACLE", "on") != "off" and vllm_python().exists()


@dataclass(frozen=True)
class Verdict:
    instance: str
    rank: int
    ok: bool
    error: str
    model_checked: bool  # vLLM's model config was checked too (the checkpoint is here)


@dataclass(frozen=True)
class Judgement:
    """What the oracle said of a plan's launches; `version` None when no vLLM was at hand."""

    version: str | None
    verdicts: tuple[Verdict, ...]
    notes: tuple[str, ...]

    def problems(self) -> list[Problem]:
        """One problem per instance and refusal, naming the ranks it stops."""
        ranks: dict[tuple[str, str], list[int]] = {}
        for v in self.verdicts:
            if not v.ok:
                ranks.setdefault((v.instance, v.error), []).append(v.rank)
        return [
            Problem(
                f"all.vars.sparkfab.instances.{inst}",
                f"vLLM {self.version} refuses the launch of rank(s) {', '.join(map(str, rs))}: {error}",
                "the engine would exit at start; fix the flag or value it names (the recipe's or the instance's)",
            )
            for (inst, error), rs in ranks.items()
        ]


@dataclass(frozen=True)
class _Launch:
    instance: str
    rank: int
    argv: tuple[str, ...]
    model_dir: str | None


def _launches(plan: Plan) -> list[_Launch]:
    out = []
    for inst in plan.instances:
        rec = inst.recipe
        if rec is None or rec.engine != "vllm":
            continue
        for r in inst.ranks:
            lx = launch(plan, inst, plan.host(r.host), rec)
            found = _checkpoint(inst) if r.rank == 0 else None
            out.append(_Launch(inst.name, r.rank, lx.argv, str(found) if found else None))
    return out


def _checkpoint(inst: Instance) -> Path | None:
    rec = inst.recipe
    assert rec is not None
    runtime = inst.runtime or "docker"
    return modelcheck.local_checkpoint(inst.model or rec.model, volumes(rec, inst), runtime)


def _identity(py: Path) -> str:
    """What a verdict depends on besides its input: which vLLM gave it."""
    prefix = py.parent.parent
    dists = sorted(p.name for p in prefix.glob("lib/python*/site-packages/vllm*.dist-info"))
    return f"{py}|{'|'.join(dists)}"


def _key(identity: str, item: _Launch) -> str:
    config = ""
    if item.model_dir:
        try:
            config = (Path(item.model_dir) / "config.json").read_text(encoding="utf-8")
        except OSError:
            config = "unreadable"
    blob = json.dumps([identity, list(item.argv), config, item.model_dir is not None])
    return hashlib.sha256(blob.encode()).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkfab" / "oracle"


def _cached(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and {"ok", "error", "version"} <= set(data) else None


def _ask(py: Path, items: list[_Launch]) -> list[dict[str, Any]]:
    request = {"launches": [{"argv": list(i.argv), "model_dir": i.model_dir} for i in items]}
    env = {**os.environ, "VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")}
    res = subprocess.run(
        [str(py), str(ASSET), "check"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )
    lines = [x for x in res.stdout.splitlines() if x.startswith("{")]
    if res.returncode != 0 or not lines:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or [f"exit {res.returncode}"]
        raise RuntimeError(f"vLLM's checks in {py} did not run: {tail[0][:300]}")
    answer = json.loads(lines[-1])
    return [{**r, "version": answer["version"]} for r in answer["results"]]


def judge(plan: Plan) -> Judgement:
    """Every vLLM launch of `plan` through vLLM's own checks (cached), or the fallback's note."""
    items = _launches(plan)
    if not items:
        return Judgement(None, (), ())
    if not enabled():
        why = "SPARKFAB_ORACLE=off" if vllm_python().exists() else f"no vLLM at {vllm_python()}"
        note = (
            f"vLLM's own parser was not run ({why}): flags and values were checked against "
            "launchers/vllm-serve-flags.txt (set SPARKFAB_VLLM_PYTHON to a Python with vLLM for its full checks)"
        )
        return Judgement(None, (), (note, *_version_notes(plan, vllm_version())))
    py = vllm_python()
    ident = _identity(py)
    store = cache_dir()
    keys = [_key(ident, i) for i in items]
    found = {k: _cached(store / f"{k}.json") for k in keys}
    missing = [i for i, k in zip(items, keys, strict=True) if found[k] is None]
    if missing:
        try:
            answers = _ask(py, missing)
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            note = f"vLLM's own checks could not run ({exc}); flags and values were checked against the flag table"
            return Judgement(None, (), (note,))
        for item, answer in zip(missing, answers, strict=True):
            k = _key(ident, item)
            found[k] = answer
            store.mkdir(parents=True, exist_ok=True)
            (store / f"{k}.json").write_text(json.dumps(answer))
    verdicts = []
    version = None
    for item, k in zip(items, keys, strict=True):
        a = found[k] or {}
        version = str(a.get("version"))
        verdicts.append(
            Verdict(item.instance, item.rank, bool(a.get("ok")), str(a.get("error", "")), bool(item.model_dir))
        )
    return Judgement(version, tuple(verdicts), tuple(_version_notes(plan, version)))


def check(plan: Plan, say: Any = None) -> Judgement:
    """`judge`, its notes said through `say`, and every refusal raised as an invalid inventory."""
    verdict = judge(plan)
    for note in verdict.notes:
        if say is not None:
            say(note)
    if verdict.problems():
        raise InventoryError(verdict.problems(), plan.source)
    return verdict


def _version_notes(plan: Plan, version: str | None) -> list[str]:
    """A recipe whose image carries another vLLM than the one that judged it (or says none)."""
    out = []
    seen = set()
    for inst in plan.instances:
        rec = inst.recipe
        if rec is None or rec.engine != "vllm" or rec.name in seen:
            continue
        seen.add(rec.name)
        if not rec.engine_version:
            out.append(
                f"recipe {rec.name}: the vLLM in {rec.image} is not recorded (engine_version); judged by {version}"
            )
        elif rec.engine_version != version:
            out.append(
                f"recipe {rec.name}: {rec.image} carries vLLM {rec.engine_version}, judged by {version}'s parser"
            )
    return out
