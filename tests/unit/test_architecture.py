"""The package's shape: its import graph has no circle and no import from a lower layer to a
higher one, and no module is longer than 400 lines without saying why at its top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "fabric" / "sparkfab"

#: top to bottom, by folder: a module imports from its own layer or a lower one. The top level
#: keeps what every layer shares (`TOP_LEVEL`); every other module's folder says its layer.
LAYERS = (
    ("cli", ("cli", "__main__")),
    ("commands", ("commands",)),
    ("operations", ("cluster", "discover")),
    ("drivers", ("push", "verify", "lab", "measure", "connection", "oracle")),
    ("generators", ("render",)),
    ("plan", ("resolve", "plan", "starter", "schema")),
    ("input", ("inventory",)),
    (
        "base",
        (
            "engines",
            "fit",
            "switches",
            "facts",
            "files",
            "lldp",
            "assets",
            "modelcheck",
            "spark",
            "errors",
            "lock",
            "paths",
            "proc",
            "others",
        ),
    ),
)
#: the modules at the package's top: what every layer shares, and the front door
TOP_LEVEL = 13
LONG = 400
REASON = "Longer than 400 lines because"


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every sparkfab module `name` imports, at the top or inside a function."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sparkfab":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                deps.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.split(".")[0] == "sparkfab"}
    # a package's own __init__ is not an edge of its modules
    return {d for d in deps if d in known and d != name and not name.startswith(d + ".")}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _layer(module: str) -> int:
    if module == "sparkfab":
        return len(LAYERS) - 1
    for i, (_, names) in enumerate(LAYERS):
        if any(module == f"sparkfab.{n}" or module.startswith(f"sparkfab.{n}.") for n in names):
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_import_graph_has_no_circle():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()) or [])


def test_no_module_imports_from_a_higher_layer():
    graph = _graph()
    upward = [
        f"{m} ({LAYERS[_layer(m)][0]}) imports {d} ({LAYERS[_layer(d)][0]})"
        for m, deps in sorted(graph.items())
        for d in sorted(deps)
        if _layer(d) < _layer(m)
    ]
    assert upward == []


def test_every_folder_and_top_level_module_has_one_layer():
    named = [n for _, names in LAYERS for n in names]
    assert len(named) == len(set(named)), "a name in two layers"
    here = {f.stem for f in PACKAGE.glob("*.py") if f.stem != "__init__"}
    here |= {d.name for d in PACKAGE.iterdir() if (d / "__init__.py").exists()}
    assert here == set(named), f"unlisted: {sorted(here - set(named))}; gone: {sorted(set(named) - here)}"


def test_the_top_level_keeps_about_a_dozen_modules():
    top = sorted(f.stem for f in PACKAGE.glob("*.py") if f.stem != "__init__")
    assert len(top) <= TOP_LEVEL, f"{len(top)} modules at the top: put a module in the folder of its concept: {top}"


def test_the_checks_themselves_find_a_circle_and_an_upward_import():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _layer("sparkfab.render.tree") > _layer("sparkfab.commands.deploy_cmd")
    with pytest.raises(AssertionError, match="in no layer"):
        _layer("sparkfab.somewhere_new")


def test_a_long_module_says_why_at_its_top():
    long = {
        str(f.relative_to(REPO)): n
        for f in PACKAGE.rglob("*.py")
        if (n := len(f.read_text().splitlines())) > LONG
        and REASON not in (ast.get_docstring(ast.parse(f.read_text())) or "")
    }
    assert long == {}, f"split these, or say '{REASON} ...' in their docstring"


def test_only_the_engine_seam_compares_engine_names():
    """What an engine is lives in `engines/`: no other module (the lab included) branches on an
    engine's name (`== "vllm"`, `in ("vllm", ...)`, a table keyed by names); it asks the
    engine's description. (The engines' own oracle scripts in assets/ run in the engine's
    Python and are not sparkfab's modules.)"""
    from sparkfab import engines

    names = set(engines.ENGINES)
    found = []
    for name, path in sorted(_modules().items()):
        if name.startswith(("sparkfab.engines", "sparkfab.assets")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                consts = [c for s in sides for c in ([s] if isinstance(s, ast.Constant) else getattr(s, "elts", []))]
                if any(isinstance(c, ast.Constant) and c.value in names for c in consts):
                    found.append(f"{name}:{node.lineno}")
            keys = getattr(node, "keys", None) if isinstance(node, ast.Dict) else None
            if keys and all(isinstance(k, ast.Constant) and k.value in names for k in keys):
                found.append(f"{name}:{node.lineno}")
    assert not found, f"engine names compared outside engines/: {found}"


def test_every_name_the_benchmarks_import_from_sparkfab_exists():
    """The benchmarks import sparkfab's modules inside their functions, which no test runs: a
    name that moved (report's `load_run` to `runs`) broke `lab_vllm.py analyse` unnoticed."""
    import importlib

    missing = []
    for script in sorted((REPO / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sparkfab":
                module = importlib.import_module(node.module)
                for a in node.names:
                    if not hasattr(module, a.name) and not _submodule(f"{node.module}.{a.name}"):
                        missing.append(f"{script.name}: {node.module}.{a.name}")
    assert not missing, missing


def _submodule(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the parent is a module, not a package
        return False
