"""Each engine's own verdict on every launch, before a host runs it: the engine's parser on the
whole argv each rank will execute (vLLM: `vllm serve`'s parser, its post-parse checks and the
engine arguments it builds, and, where the checkpoint is on this machine, its model config
checked against the instance's tensor-parallel size; SGLang: its parser and the server arguments
it builds).

It runs the engine's oracle asset (`engines.Oracle`: `assets/vllm_oracle.py`,
`assets/sglang_oracle.py`) in the Python of an install of that engine: the variable the engine
names (`SPARKFAB_VLLM_PYTHON`, `SPARKFAB_SGLANG_PYTHON`), else the checkout's venv
(`.venv-vllm`, `.venv-sglang`; scripts/setup.sh makes them). Engines take seconds to import, so
each verdict is kept under `~/.cache/sparkfab/oracle`, keyed by what it depends on (that install,
the argv, the checkpoint's config.json). The argv is judged with the plan's addresses as stand-ins
(`oracle.standins`): an inventory that differs from one judged before only in its Sparks'
addresses finds every verdict kept. Without an install here, validate relies on the flag
table (`engines.flags`, already applied while resolving) and says that it did.
`SPARKFAB_ORACLE=off` turns the oracle off (the unit tests do).

A launch no verdict covers (a new inventory, a changed flag) is asked of a server that keeps the
engine imported (`oracle.warm`): the first ask starts it and pays the import once; later asks
within `SPARKFAB_ORACLE_IDLE_S` are answered without importing the engine again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkfab import modelcheck
from sparkfab.engines import Engine, flags
from sparkfab.errors import InventoryError, Problem
from sparkfab.oracle import standins, warm
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import launch, volumes

#: the checkout sparkfab runs from, where scripts/setup.sh makes the engines' venvs (a wheel carries none)
_CHECKOUT = Path(__file__).resolve().parents[3]
ASSETS = Path(__file__).resolve().parents[1] / "assets"
TIMEOUT_S = 600


def engine_python(spec: Engine) -> Path | None:
    """The Python of an install of the engine: the variable it names, else the checkout's venv
    (not `repo_dir`, which finds shipped content, never a venv); None for an engine without an oracle."""
    if spec.oracle is None:
        return None
    return Path(os.environ.get(spec.oracle.python_env) or _CHECKOUT / spec.oracle.venv / "bin" / "python")


def enabled(spec: Engine) -> bool:
    py = engine_python(spec)
    return os.environ.get("SPARKFAB_ORACLE", "on") != "off" and py is not None and py.exists()


@dataclass(frozen=True)
class Verdict:
    instance: str
    rank: int
    ok: bool
    error: str
    model_checked: bool  # the engine's model config was checked too (the checkpoint is here)
    judge: str = ""  # the engine and release that gave it ("vLLM 0.32.0")


@dataclass(frozen=True)
class Judgement:
    """What the oracles said of a plan's launches; `judges` empty when no engine was at hand."""

    judges: tuple[str, ...]
    verdicts: tuple[Verdict, ...]
    notes: tuple[str, ...]

    @property
    def version(self) -> str | None:
        """Who judged, in words ("vLLM 0.32.0 and SGLang 0.5.23"), or None."""
        return " and ".join(self.judges) or None

    def problems(self) -> list[Problem]:
        """One problem per instance and refusal, naming the ranks it stops."""
        ranks: dict[tuple[str, str, str], list[int]] = {}
        for v in self.verdicts:
            if not v.ok:
                ranks.setdefault((v.instance, v.judge, v.error), []).append(v.rank)
        return [
            Problem(
                f"all.vars.sparkfab.instances.{inst}",
                f"{judge} refuses the launch of rank(s) {', '.join(map(str, rs))}: {error}",
                "the engine would exit at start; fix the flag or value it names (the recipe's or the instance's)",
            )
            for (inst, judge, error), rs in ranks.items()
        ]


#: verdicts by key that a run already has (`prefetch`'s), beside the cache
Known = dict[str, dict[str, Any] | None]


@dataclass(frozen=True)
class _Launch:
    instance: str
    rank: int
    argv: tuple[str, ...]  # as judged: the plan's addresses as stand-ins (`standins`)
    model_dir: str | None
    addresses: dict[str, str] = field(default_factory=dict)  # stand-in -> the plan's address


def _launches(plan: Plan) -> dict[Engine, list[_Launch]]:
    """Every launch of the plan whose engine has an oracle, by engine."""
    out: dict[Engine, list[_Launch]] = {}
    known = standins.plan_addresses(plan)
    for inst in plan.instances:
        rec = inst.recipe
        if rec is None or rec.engine_spec.oracle is None:
            continue
        for r in inst.ranks:
            lx = launch(plan, inst, plan.host(r.host), rec)
            found = _checkpoint(inst) if r.rank == 0 else None
            argv, addresses = standins.stand_in(lx.argv, known)
            out.setdefault(rec.engine_spec, []).append(
                _Launch(inst.name, r.rank, argv, str(found) if found else None, addresses)
            )
    return out


def _checkpoint(inst: Instance) -> Path | None:
    rec = inst.recipe
    assert rec is not None
    runtime = inst.runtime or "docker"
    return modelcheck.local_checkpoint(inst.model or rec.model, volumes(rec, inst), runtime)


def install_identity(py: Path, dist: str) -> str:
    """What a verdict depends on besides its input: which install of the engine gave it."""
    prefix = py.parent.parent
    dists = sorted(p.name for p in prefix.glob(f"lib/python*/site-packages/{dist}*.dist-info"))
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


def _keep(store: Path, answers: dict[str, dict[str, Any]], notes: list[str]) -> None:
    """Keep each verdict for the next run; where the cache cannot be written (a read-only home)
    the verdicts still count, and a note says they will be asked again."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        for k, answer in answers.items():
            (store / f"{k}.json").write_text(json.dumps(answer))
    except OSError as exc:
        notes.append(f"the engine's verdicts were not kept ({store}: {exc.strerror or exc}): the next run asks again")


def _env() -> dict[str, str]:
    return {**os.environ, "VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")}


def _ask(spec: Engine, py: Path, items: list[_Launch]) -> list[dict[str, Any]]:
    """Each launch's answer from the engine's checks: its warm server where it can keep one,
    else (or where the server could not answer) one run of the oracle for these launches."""
    assert spec.oracle is not None
    request = {"launches": [{"argv": list(i.argv), "model_dir": i.model_dir} for i in items]}
    path = warm_socket(spec, py) if warm.idle_s() > 0 else None
    answer = warm.ask(py, ASSETS / spec.oracle.asset, path, request, _env(), TIMEOUT_S) if path else None
    if answer is None:
        res = subprocess.run(
            [str(py), str(ASSETS / spec.oracle.asset), "check"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=_env(),
            timeout=TIMEOUT_S,
        )
        lines = [x for x in res.stdout.splitlines() if x.startswith("{")]
        if res.returncode != 0 or not lines:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            raise RuntimeError(f"{spec.title}'s checks in {py} did not run: {tail[0][:300]}")
        answer = json.loads(lines[-1])
    return [{**r, "version": answer["version"]} for r in answer["results"]]


#: the environment the engines' checks read (vLLM's and SGLang's settings, Hugging Face's cache
#: and hub): a server started under other values is another server
ENGINE_ENV = ("VLLM_", "SGLANG_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_")


def warm_socket(spec: Engine, py: Path) -> Path | None:
    """Where the engine's warm server listens: one per install, oracle code, verdict cache and
    engine environment (a reinstall, a changed oracle or another HF_HOME never answers from an
    older server)."""
    assert spec.oracle is not None
    code = b"".join((ASSETS / name).read_bytes() for name in (spec.oracle.asset, "oracle_cli.py"))
    env = sorted((k, v) for k, v in _env().items() if k.startswith(ENGINE_ENV))
    key = json.dumps([str(cache_dir()), install_identity(py, spec.oracle.dist), hashlib.sha256(code).hexdigest(), env])
    return warm.socket_path(spec.name, key)


def stop_warm(spec: Engine) -> int | None:
    """Stop the engine's warm server for this install and cache; its pid, or None where none listens."""
    py = engine_python(spec)
    path = warm_socket(spec, py) if py is not None else None
    return warm.stop(path) if path is not None else None


def judge(plan: Plan, say: Any = None, known: Known | None = None) -> Judgement:
    """Every launch of `plan` through its engine's own checks (cached), or the fallback's note;
    `say` hears, before the engine runs, what it is about to check (a first judgement takes
    seconds: without a word, validate looked hung)."""
    judges: list[str] = []
    verdicts: list[Verdict] = []
    notes: list[str] = []
    for spec, items in _launches(plan).items():
        found = _judge(plan, spec, items, notes, say, {} if known is None else known)
        if found is None:
            continue
        judges.append(found[0])
        verdicts += found[1]
        notes += _version_notes(plan, spec, found[0])
    return Judgement(tuple(judges), tuple(verdicts), tuple(notes))


def _judge(
    plan: Plan, spec: Engine, items: list[_Launch], notes: list[str], say: Any, known: Known
) -> tuple[str, list[Verdict]] | None:
    assert spec.oracle is not None
    py = engine_python(spec)
    if not enabled(spec) or py is None:
        why = "SPARKFAB_ORACLE=off" if py is not None and py.exists() else f"no {spec.title} at {py}"
        notes.append(
            f"{spec.title}'s own parser was not run ({why}): flags and values were checked against "
            f"launchers/{spec.flags_file} (set {spec.oracle.python_env} to a Python with {spec.title} "
            "for its full checks)"
        )
        notes += _version_notes(plan, spec, f"{spec.title} {flags.version(spec)}")
        return None
    answers = _answers(spec, py, items, notes, say, plan.cluster, known)
    if answers is None:
        return None
    verdicts = []
    judge = spec.title
    for item, found in zip(items, answers, strict=True):
        a = found or {}
        judge = f"{spec.title} {a.get('version')}"
        error = standins.said_with_addresses(str(a.get("error", "")), item.addresses)
        verdicts.append(Verdict(item.instance, item.rank, bool(a.get("ok")), error, bool(item.model_dir), judge))
    return judge, verdicts


def _answers(
    spec: Engine, py: Path, items: list[_Launch], notes: list[str], say: Any, what: str, known: Known
) -> list[dict[str, Any] | None] | None:
    """Each launch's verdict, in the order of `items`: from `known` (`prefetch`'s), the cache, or
    one run of the engine's checks for all that have none; None where the checks could not run
    (said in `notes`)."""
    assert spec.oracle is not None
    ident = install_identity(py, spec.oracle.dist)
    store = cache_dir()
    keys = [_key(ident, i) for i in items]
    found = {k: known.get(k) or _cached(store / f"{k}.json") for k in keys}
    missing = list({k: i for i, k in zip(items, keys, strict=True) if found[k] is None}.items())
    if missing:
        if say is not None:
            say(
                f"{spec.title}'s own parser is checking {len(missing)} launch(es) of {what} "
                f"({py}; a first check takes seconds, each verdict is kept)"
            )
        try:
            answers = _ask(spec, py, [i for _k, i in missing])
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            notes.append(
                f"{spec.title}'s own checks could not run ({exc}); flags and values were checked against the flag table"
            )
            return None
        got = {k: a for (k, _i), a in zip(missing, answers, strict=True)}
        found.update(got)
        known.update(got)
        _keep(store, got, notes)
    return [found[k] for k in keys]


def prefetch(plans: list[Plan], say: Any = None) -> Known:
    """Ask each engine once for every launch of `plans` that has no verdict yet, for `check` of
    each plan to find (validate of several inventories: one start of each engine's parser, a few
    seconds each, instead of one per inventory, whether or not the cache can keep them). What
    could not run is left for `check` to say per plan."""
    known: Known = {}
    by_engine: dict[str, tuple[Engine, list[_Launch]]] = {}
    for plan in plans:
        for spec, items in _launches(plan).items():
            by_engine.setdefault(spec.name, (spec, []))[1].extend(items)
    asks = [(spec, py, items) for spec, items in by_engine.values() if (py := engine_python(spec)) and enabled(spec)]
    # the engines' parsers at once (each mostly imports its engine: vLLM's and SGLang's side by side)
    with ThreadPoolExecutor(max_workers=max(1, len(asks))) as pool:
        what = f"{len(plans)} inventories"
        running = [pool.submit(_answers, spec, py, items, [], say, what, known) for spec, py, items in asks]
    for done in running:
        done.result()  # what _answers does not take as a note is this run's error, as without threads
    return known


def check(plan: Plan, say: Any = None, known: Known | None = None) -> Judgement:
    """`judge`, its notes said through `say`, and every refusal raised as an invalid inventory."""
    verdict = judge(plan, say, known)
    for note in verdict.notes:
        if say is not None:
            say(note)
    if verdict.problems():
        raise InventoryError(verdict.problems(), plan.source)
    return verdict


def _version_notes(plan: Plan, spec: Engine, judge: str) -> list[str]:
    """A recipe whose image carries another release of the engine than the one that judged it
    (or says none)."""
    version = judge.rsplit(" ", 1)[-1]
    out = []
    seen = set()
    for inst in plan.instances:
        rec = inst.recipe
        if rec is None or rec.engine_spec is not spec or rec.name in seen:
            continue
        seen.add(rec.name)
        if not rec.engine_version:
            out.append(
                f"recipe {rec.name}: the {spec.title} in {rec.image} is not recorded (engine_version); "
                f"judged by {version}"
            )
        elif rec.engine_version != version:
            out.append(
                f"recipe {rec.name}: {rec.image} carries {spec.title} {rec.engine_version}, "
                f"judged by {version}'s parser"
            )
    return out
