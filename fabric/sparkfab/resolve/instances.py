"""Stage 3: each instance's hosts, recipe and flags, topology and ranks in cable order."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from sparkfab import modelcheck
from sparkfab.engines import Engine, flags
from sparkfab.engines.recipes import SECRETS_FILE, Recipe, is_secret_name
from sparkfab.errors import RenderError
from sparkfab.plan import Rank, Topology
from sparkfab.resolve.cables import Cable
from sparkfab.resolve.context import SF, Ctx, close
from sparkfab.resolve.ranks import RingError, order_ring, order_switched


@dataclass(frozen=True)
class ResolvedInstance:
    """An instance with its topology and ranks known (the Plan's Instance adds its settings)."""

    name: str
    topology: Topology
    ranks: list[Rank]
    switch: str | None


# -------------------------------------------------------------------------- instances


def instances(ctx: Ctx, cables: list[Cable]) -> list[ResolvedInstance]:
    sf = ctx.inv.sparkfab
    owner: dict[str, str] = {}
    out = []
    for name, inst in sf.instances.items():
        path = SF + ("instances", name)
        if inst.tp != len(inst.hosts):
            ctx.add(
                path + ("tp",),
                f"tp {inst.tp} but the instance has {len(inst.hosts)} Sparks",
                "tensor parallelism runs one rank per Spark: tp must equal the number of hosts",
            )
        hosts = _instance_hosts(ctx, name, inst.hosts, owner)
        if hosts is None:
            continue
        _check_launcher(ctx, name, inst.launcher)
        resolved = _topology(ctx, name, hosts, cables)
        if resolved is not None:
            _check_gloo(ctx, name, inst.launcher, resolved[0], len(hosts))
            out.append(ResolvedInstance(name, *resolved))
    return out


def _check_gloo(ctx: Ctx, name: str, launcher: str | None, topology: Topology, n: int) -> None:
    """A Gloo engine needs every rank reachable on one subnet: a ring of three or more has none
    unless its control plane is routed over the fabric."""
    rec = _recipes(ctx).get(launcher or "")
    if rec is None or rec.tp_backend != "gloo" or topology not in ("triangle", "ring"):
        return
    if ctx.inv.sparkfab.control_plane != "fabric":
        ctx.add(
            SF + ("instances", name, "launcher"),
            f"launcher '{launcher}' sends its all-reduces over Gloo TCP, which connects every rank to every "
            f"other; a switchless {topology} of {n} Sparks has no subnet they all share",
            "set control_plane: fabric (routes over the ring), or use a pair or a switch",
        )


def _recipes(ctx: Ctx) -> dict[str, Recipe]:
    """The recipes the inventory can name; a broken recipe file is a problem of the instance."""
    try:
        return ctx.recipes()
    except RenderError:
        return {}


def _check_launcher(ctx: Ctx, name: str, launcher: str | None) -> None:
    if launcher is None:
        return
    try:
        known = ctx.recipes()
    except RenderError as exc:
        ctx.add(SF + ("instances", name, "launcher"), f"recipe {exc}", "fix the recipe file")
        return
    if launcher not in known:
        dirs = " and ".join(f"{d}/*.yml" for d in (ctx.recipe_dirs or ()))
        ctx.add(
            SF + ("instances", name, "launcher"),
            f"unknown launcher '{launcher}'",
            close(launcher, sorted(known))
            + f" (recipes live in {dirs or 'launchers/*.yml'}; your own go in launchers/ beside the inventory)",
        )
        return
    recipe = known[launcher]
    spec = recipe.engine_spec
    _check_secrets(ctx, name, recipe)
    backend = ctx.inv.sparkfab.instances[name].backend or recipe.backend
    if backend == "ray" and not spec.ray:
        ctx.add(
            SF + ("instances", name, "backend"),
            f"{spec.name} does not run on Ray (backend: ray)",
            f"remove backend: ray; {spec.name} starts its own processes on every rank",
        )
    runtime = ctx.inv.sparkfab.instances[name].runtime or recipe.default_runtime
    if runtime == "docker" and not recipe.image:
        ctx.add(
            SF + ("instances", name, "runtime"),
            f"runtime docker runs the recipe's image, and recipe {recipe.name} names none",
            f"remove runtime: docker ({spec.name} runs as a {recipe.default_runtime}), or use a recipe with an image",
        )
    if spec.flags_file:
        _check_flags(ctx, name, recipe)
    if spec.needs_image:
        _check_architecture(ctx, name, recipe)
    _check_memory(ctx, name, recipe)


def _local_checkpoint(ctx: Ctx, name: str, recipe: Recipe) -> Any:
    """The instance's checkpoint directory on this machine (through the recipe's volumes and the
    instance's Hugging Face cache), or None."""
    inst = ctx.inv.sparkfab.instances[name]
    volumes = [v for v in recipe.volumes if not (inst.hf_cache and v.split(":")[1:2] == [modelcheck.HF_CACHE])]
    volumes += [f"{inst.hf_cache}:{modelcheck.HF_CACHE}"] if inst.hf_cache else []
    return modelcheck.local_checkpoint(inst.model or recipe.model, volumes, inst.runtime or "docker")


def _check_architecture(ctx: Ctx, name: str, recipe: Recipe) -> None:
    """The checkpoint divides into the instance's TP size, where sparkfab can know its numbers:
    the checkpoint on this machine, else what the recipe declares for its own model."""
    inst = ctx.inv.sparkfab.instances[name]
    model = inst.model or recipe.model
    found = _local_checkpoint(ctx, name, recipe)
    config: tuple[dict[str, Any], str] | None = None
    if found is not None:
        data = modelcheck.read_config(found)
        config = (data, str(found / "config.json")) if data is not None else None
    elif model == recipe.model:
        try:
            config = recipe.declared_config()
        except ValueError as exc:
            ctx.add(SF + ("instances", name, "launcher"), f"recipe {recipe.name}: {exc}", "fix the recipe file")
            return
    if config is None:
        where = (
            "is not on this machine" if model.startswith("/") or "/" not in model else "is not in this machine's cache"
        )
        declared = f"declares {recipe.model}'s only" if model != recipe.model else "declares none (`architecture:`)"
        ctx.tp_unchecked[name] = (
            f"TP {inst.tp} not checked against {model}'s architecture: the checkpoint {where} and recipe "
            f"{recipe.name} {declared}"
        )
        return
    problems = modelcheck.tp_problems(config[0], inst.tp)
    if problems:
        ctx.add(
            SF + ("instances", name, "tp"),
            f"TP {inst.tp} cannot serve {model}: {'; '.join(problems)} (from {config[1]})",
            f"{recipe.engine} stops every rank before a weight loads: choose a TP size the checkpoint divides into, "
            f"or a checkpoint padded for TP {inst.tp}",
        )


def _check_memory(ctx: Ctx, name: str, recipe: Recipe) -> None:
    """The recipe's memory settings against a Spark (sparkfab.fit), from the checkpoint's own
    config.json and bytes where this machine holds it, else the recipe's `fit:` preset."""
    from sparkfab import fit
    from sparkfab.fit.shape import ShapeError, weights_on_disk

    inst = ctx.inv.sparkfab.instances[name]
    known = fit.presets() if recipe.fit else {}
    if recipe.fit and recipe.fit not in known:
        ctx.add(SF + ("instances", name, "launcher"), f"recipe {recipe.name}: fit: no preset '{recipe.fit}'",
                close(recipe.fit, list(known)))  # fmt: skip
        return
    found = _local_checkpoint(ctx, name, recipe)
    on_disk = None
    try:
        if found is not None and (data := modelcheck.read_config(found)) is not None:
            shape, on_disk, where = fit.from_dict(data), weights_on_disk(found), str(found / "config.json")
        elif recipe.fit and (inst.model or recipe.model) == recipe.model:
            shape, where = known[recipe.fit][0], f"`sparkfab fit` preset {recipe.fit}"
        else:
            return
    except ShapeError:
        return
    problems = recipe.engine_spec.memory_problems(shape, inst.tp, {**recipe.flags, **inst.flags}, on_disk)
    if problems:
        ctx.memory[name] = tuple(f"{p} (sized from {where})" for p in problems)


def _check_flags(ctx: Ctx, name: str, recipe: Recipe) -> None:
    """Every flag, the recipe's and the instance's, is one the engine's server knows with a value
    its parser takes (as the flag table says), and none is one sparkfab generates per rank."""
    own = SF + ("instances", name, "flags")
    spec = recipe.engine_spec
    for flag, value in recipe.flags.items():
        problem = _flag_problem(spec, flag, value)
        if problem:
            ctx.add(SF + ("instances", name, "launcher"), f"recipe {recipe.name}: {problem[0]}", problem[1])
    for flag, value in ctx.inv.sparkfab.instances[name].flags.items():
        problem = _flag_problem(spec, flag, value)
        if problem:
            ctx.add(own + (flag,), *problem)


def _flag_problem(spec: Engine, flag: str, value: object) -> tuple[str, str] | None:
    """(message, hint) for a flag sparkfab must not render, or None."""
    if flag in spec.secret_flags:
        env = spec.secret_flags[flag]
        where = "ps, docker inspect, launch files"
        if env is None:
            return (
                f"--{flag} would put a secret on the engine's command line ({where}), and {spec.name} "
                "reads it from nowhere else",
                f"remove it; serve {spec.name} behind a proxy that checks the key, or on a network only "
                "your clients reach",
            )
        return (
            f"--{flag} would put a secret on the engine's command line ({where})",
            f"remove it and export {env} where you run `sparkfab apply` (it goes to the root-only "
            f"{SECRETS_FILE} and reaches the engine by name)",
        )
    if flag in spec.generated_flags:
        return (
            f"--{flag} is generated by sparkfab (from {spec.generated_flags[flag]}); "
            "a second one would differ per rank",
            "remove it and set what it comes from instead",
        )
    known = flags.names(spec)
    release = f"{spec.server} {flags.version(spec)}"
    if f"--{flag}" not in known:
        near = difflib.get_close_matches(f"--{flag}", sorted(known), n=1, cutoff=0.75)
        hint = f"did you mean '{near[0][2:]}'?" if near else f"see `{' '.join(spec.command)} --help`"
        return f"--{flag} is not a flag of {release}", hint
    problem = flags.value_problem(spec, flag, value)
    return (problem, f"{release}'s parser would refuse it and the engine would not start") if problem else None


def _check_secrets(ctx: Ctx, name: str, recipe: Recipe) -> None:
    """A secret in `env:` would land in a world-readable launch file and the engine's environment
    listing: secrets travel by name from the host's root-only secrets file instead."""
    inst = ctx.inv.sparkfab.instances[name]
    declared = {*recipe.engine_spec.secrets, *inst.secrets}
    for origin, env in ((("launcher",), recipe.env), (("env",), inst.env)):
        for key in env:
            if key in declared or is_secret_name(key):
                where = SF + ("instances", name, *origin) + ((key,) if origin == ("env",) else ())
                prefix = f"recipe {recipe.name}: " if origin == ("launcher",) else ""
                ctx.add(
                    where,
                    f"{prefix}env {key} holds a secret; it would be written into the launch files in plain text",
                    f"remove it, list {key} under the instance's secrets: and export it where you run "
                    f"`sparkfab apply` (it goes to the root-only {SECRETS_FILE})",
                )


def _instance_hosts(ctx: Ctx, name: str, hosts: list[str], owner: dict[str, str]) -> list[str] | None:
    path = SF + ("instances", name, "hosts")
    ok = True
    for j, h in enumerate(hosts):
        if h not in ctx.inv.hosts:
            ctx.add(path + (j,), f"unknown host '{h}'", close(h, sorted(ctx.inv.hosts)))
            ok = False
        elif h in owner:
            ctx.add(path + (j,), f"{h} is already in instance '{owner[h]}'", "instances cannot share a Spark")
            ok = False
        else:
            owner[h] = name
    if len(set(hosts)) != len(hosts):
        ctx.add(path, "lists a host twice", "")
        ok = False
    return hosts if ok else None


def _topology(
    ctx: Ctx, name: str, hosts: list[str], cables: list[Cable]
) -> tuple[Topology, list[Rank], str | None] | None:
    inst = ctx.inv.sparkfab.instances[name]
    path = SF + ("instances", name)
    head = _head(ctx, name, hosts)
    given = _given_ranks(ctx, name, hosts)
    if given is None:
        return None
    if len(hosts) == 1:
        return "single", [Rank(0, hosts[0], None, None, None, None)], None
    switches = _common_switch(hosts, cables)
    if switches:
        return "switched", order_switched(hosts, head, given), switches
    if any(c.switched and c.spark_end().node in hosts for c in cables):
        ctx.add(
            path + ("hosts",),
            "Sparks of one instance sit on different fabrics (some on a switch, some not)",
            "cable every Sparks of an instance to one switch, or none of them",
        )
        return None
    links = [c for c in cables if not c.switched and c.a.node in hosts and c.b.node in hosts]
    try:
        topo, ranks = order_ring(hosts, head, links, given, inst.tp)
    except RingError as exc:
        ctx.add(path + ("hosts",), exc.message, exc.hint)
        return None
    return topo, ranks, None


def _given_ranks(ctx: Ctx, name: str, hosts: list[str]) -> dict[str, int | None] | None:
    """Ranks written on hosts: each at most once and below the instance's size."""
    given: dict[str, int | None] = {h: r for h in hosts if (r := ctx.inv.hosts[h].rank) is not None}
    ok = True
    for h, r in given.items():
        others = [o for o, q in given.items() if q == r and o != h]
        if others:
            ctx.add(
                ("all", "hosts", h, "rank"),
                f"rank {r} is also given to {', '.join(others)} (instance '{name}')",
                "each rank belongs to one Spark",
            )
            ok = False
        elif r is not None and r >= len(hosts):
            ctx.add(
                ("all", "hosts", h, "rank"),
                f"rank {r} is beyond instance '{name}' of {len(hosts)} Sparks",
                f"ranks run from 0 to {len(hosts) - 1}",
            )
            ok = False
    return given if ok else None


def _head(ctx: Ctx, name: str, hosts: list[str]) -> str:
    inst = ctx.inv.sparkfab.instances[name]
    zero = [h for h in hosts if ctx.inv.hosts[h].rank == 0]
    if inst.head is not None and inst.head not in hosts:
        ctx.add(
            SF + ("instances", name, "head"),
            f"head '{inst.head}' is not one of the instance's hosts",
            close(inst.head, hosts),
        )
        return zero[0] if zero else hosts[0]
    return inst.head or (zero[0] if zero else hosts[0])


def _common_switch(hosts: list[str], cables: list[Cable]) -> str | None:
    per_host: dict[str, set[str]] = {h: set() for h in hosts}
    for c in cables:
        if c.switched and c.spark_end().node in per_host:
            sw = c.a.node if c.a.switch else c.b.node
            per_host[c.spark_end().node].add(sw)
    common = set.intersection(*per_host.values()) if per_host else set()
    return sorted(common)[0] if common else None


# ------------------------------------------------------------------------------ hosts
