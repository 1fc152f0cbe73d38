"""Tests you can find from the code: every module of the package is imported by a test file, or
has a test file named after it (`test_<module>.py`, a verb's module `test_<verb>.py`), or is
named below with the test file that exercises it and how. A new module without either fails
here; an entry whose module is gone, whose test file is gone, or that a test now imports directly
fails too, so the list only shrinks."""

from __future__ import annotations

import ast

from tests.conftest import REPO

PACKAGE = REPO / "fabric" / "sparkfab"

#: module -> the test file that exercises it, for the modules no test imports by name
COVERED = {
    "sparkfab.__main__": "tests/unit/cli/hostile/test_report.py",  # `python -m sparkfab report` in a child
    "sparkfab.assets.collective": "tests/unit/assets/test_collective_stop.py",
    "sparkfab.assets.oracle_cli": "tests/slow/test_oracle.py",  # each engine's oracle, run in its Python
    "sparkfab.assets.vllm_oracle": "tests/slow/test_oracle.py",
    "sparkfab.assets.sglang_oracle": "tests/slow/test_launch_sglang.py",
    "sparkfab.commands.peer_ssh_cmd": "tests/lab/test_lab_perf.py",
    "sparkfab.commands.preflight_cmd": "tests/lab/test_lab_preflight.py",
    "sparkfab.commands.serve_cmd": "tests/lab/test_lab_converge.py",
    "sparkfab.commands.tables": "tests/lab/test_lab.py",  # verify's report table
    "sparkfab.commands.verify_cmd": "tests/lab/test_lab.py",
    "sparkfab.engines.collective": "tests/unit/resolve/test_engines.py",
    "sparkfab.engines.sglang": "tests/unit/resolve/test_engines.py",
    "sparkfab.engines.vllm": "tests/unit/resolve/test_engines.py",
    "sparkfab.inventory.locate": "tests/unit/inventory/test_inventory.py",  # each problem's path and line
    "sparkfab.inventory.model": "tests/unit/inventory/test_inventory.py",
    "sparkfab.inventory.problems": "tests/unit/inventory/test_inventory.py",
    "sparkfab.inventory.read": "tests/unit/inventory/test_reader_properties.py",
    "sparkfab.lab.cgroups": "tests/lab/test_lab_machines.py",  # Docker in a booted Spark
    "sparkfab.lab.ready": "tests/lab/test_lab_machines.py",  # a reboot keeps the fabric
    "sparkfab.measure.access": "tests/unit/measure/test_bench_access.py",
    "sparkfab.measure.http": "tests/slow/test_realserver.py",
    "sparkfab.measure.plots": "tests/unit/cli/hostile/test_estimate.py",  # --plot outputs
    "sparkfab.render.exporter": "tests/unit/render/test_render.py",  # the goldens (pair-1cable's exporter)
    "sparkfab.render.text": "tests/unit/render/test_injection.py",
    "sparkfab.resolve.cables": "tests/unit/resolve/test_topology.py",  # through load_plan
    "sparkfab.resolve.context": "tests/unit/resolve/test_topology.py",
    "sparkfab.resolve.hosts": "tests/unit/resolve/test_topology.py",
    "sparkfab.resolve.instances": "tests/unit/resolve/test_engines.py",
    "sparkfab.resolve.rails": "tests/unit/resolve/test_topology.py",
    "sparkfab.resolve.ranks": "tests/unit/resolve/test_topology.py",
    "sparkfab.verify.mesh": "tests/lab/test_lab_control.py",
    "sparkfab.facts.remote": "tests/unit/verify/test_host_checks.py",
    "sparkfab.yamlload": "tests/unit/inventory/test_reader_properties.py",
}


def _modules() -> set[str]:
    out = set()
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _imported() -> set[str]:
    """Every sparkfab module a test file imports by name (`from a import b` counts a.b too)."""
    out: set[str] = set()
    for t in (REPO / "tests").rglob("*.py"):
        for n in ast.walk(ast.parse(t.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("sparkfab"):
                out |= {n.module, *(f"{n.module}.{a.name}" for a in n.names)}
            elif isinstance(n, ast.Import):
                out |= {a.name for a in n.names if a.name.startswith("sparkfab")}
    return out


def _named(modules: set[str]) -> set[str]:
    """The modules test files are named after: `test_<name>.py` names the module called `<name>`
    (a verb's module `<name>_cmd` or `<name>_cmds`); where several are called so (`push.run`,
    `verify.run`) and one's package is the test file's folder, that one."""
    out: set[str] = set()
    for t in (REPO / "tests").rglob("test_*.py"):
        called = {m for m in modules if _own_name(m) == t.stem.removeprefix("test_")}
        out |= {m for m in called if m.split(".")[-2] == t.parent.name} or called
    return out


def _own_name(module: str) -> str:
    return module.rsplit(".", 1)[-1].removesuffix("_cmds").removesuffix("_cmd")


def test_every_module_has_a_test_that_imports_it_is_named_after_it_or_is_listed():
    modules = _modules()
    imported, named = _imported(), _named(modules)
    bare = sorted(m for m in modules if m not in imported and m not in named and m not in COVERED)
    assert not bare, f"no test imports these, none is named after them, and COVERED does not list them: {bare}"


def test_the_list_only_names_modules_without_a_test_of_their_own_and_test_files_that_exist():
    modules = _modules()
    imported, named = _imported(), _named(modules)
    assert not [m for m in COVERED if m not in modules], "COVERED names modules that are gone"
    assert not [f for f in COVERED.values() if not (REPO / f).is_file()], "COVERED names test files that are gone"
    own = [m for m in COVERED if m in imported or m in named]
    assert not own, f"these have a test of their own now: take them out of COVERED: {own}"
