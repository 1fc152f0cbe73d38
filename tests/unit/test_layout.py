"""Tests found by path: a module's tests are at the path that mirrors it,
`tests/unit/<folder>/test_<module>.py` (`sparkfab/cluster/target.py` at
`tests/unit/cluster/test_target.py`, a top-level module at `tests/unit/test_<module>.py`, a
package's own `__init__` at `tests/unit/<package>/test_<package>.py`), a verb's module at
`tests/unit/commands/test_<verb>.py` or, for the hostile-input cases it runs,
`tests/unit/commands/hostile/test_<verb>.py`. A module tested only elsewhere (through the
goldens, the lab tier, the CLI, another module's tests) is named in `COVERED` with the test file
that exercises it. A new module with neither fails here; an entry whose module is gone, whose
test file is gone, or whose module now has its mirrored test file fails too, so the list only
shrinks. A package whose `__init__` holds only its docstring has nothing to test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "fabric" / "sparkfab"
UNIT = REPO / "tests" / "unit"

#: module -> the test file that exercises it, for the modules without a test at their mirrored path
COVERED = {
    "sparkfab.__main__": "tests/unit/commands/hostile/test_report.py",  # `python -m sparkfab report` in a child
    "sparkfab.assets": "tests/unit/assets/test_lldp_probe.py",
    "sparkfab.assets.oracle_cli": "tests/slow/test_oracle.py",  # each engine's oracle, run in its Python
    "sparkfab.assets.sglang_oracle": "tests/slow/test_launch_sglang.py",
    "sparkfab.assets.vllm_oracle": "tests/slow/test_oracle.py",
    "sparkfab.cluster.limits": "tests/unit/cluster/test_flip.py",  # a partial flip's whole instances
    "sparkfab.commands.collection_cmd": "tests/slow/test_collection.py",  # `sparkfab collection` builds the tarball
    "sparkfab.commands.deploy_cmd": "tests/lab/test_lab.py",  # apply, linkspeed, reset on booted Sparks
    "sparkfab.commands.fit_cmd": "tests/unit/fit/test_plan.py",  # `sparkfab fit` through the CLI
    "sparkfab.commands.inventory_cmd": "tests/unit/commands/hostile/test_validate.py",  # validate, plan, schema
    "sparkfab.commands.lab_cmd": "tests/lab/test_lab.py",  # lab up, status, down on booted Sparks
    "sparkfab.commands.peer_ssh_cmd": "tests/lab/test_lab_perf.py",
    "sparkfab.commands.preflight_cmd": "tests/lab/test_lab_preflight.py",
    "sparkfab.commands.runs": "tests/unit/push/test_processes.py",
    "sparkfab.commands.serve_cmd": "tests/lab/test_lab_converge.py",
    "sparkfab.commands.tables": "tests/lab/test_lab.py",  # verify's report table
    "sparkfab.commands.verify_cmd": "tests/lab/test_lab.py",
    "sparkfab.discover": "tests/unit/discover/test_cables.py",
    "sparkfab.discover.inventory": "tests/unit/discover/test_hostile_frames.py",  # merge
    "sparkfab.engines.flags": "tests/unit/engines/test_base.py",
    "sparkfab.facts": "tests/unit/facts/test_gather.py",
    "sparkfab.facts.remote": "tests/unit/verify/test_checks.py",
    "sparkfab.fit": "tests/unit/fit/test_check.py",
    "sparkfab.fit.shape": "tests/unit/fit/test_plan.py",
    "sparkfab.inventory.ansible_child": "tests/unit/inventory/test_ansible.py",  # Ansible's reader in a child
    "sparkfab.inventory.ansiblecfg": "tests/unit/inventory/test_ansible.py",
    "sparkfab.inventory.locate": "tests/unit/inventory/test_inventory.py",  # each problem's path and line
    "sparkfab.inventory.model": "tests/unit/inventory/test_inventory.py",
    "sparkfab.inventory.problems": "tests/unit/inventory/test_inventory.py",
    "sparkfab.lab.cgroups": "tests/lab/test_lab_machines.py",  # Docker in a booted Spark
    "sparkfab.lab.daemons": "tests/lab/test_lab_hostile_frames.py",
    "sparkfab.lab.inventory": "tests/unit/lab/test_spec.py",
    "sparkfab.lab.keys": "tests/lab/test_lab.py",
    "sparkfab.lab.links": "tests/lab/test_lab.py",  # pyroute2 in network namespaces
    "sparkfab.lab.login": "tests/lab/test_lab.py",
    "sparkfab.lab.machine": "tests/unit/lab/test_boot.py",
    "sparkfab.lab.model": "tests/slow/test_realserver.py",
    "sparkfab.lab.rates": "tests/lab/test_lab_perf.py",  # the shaped cables
    "sparkfab.lab.ready": "tests/lab/test_lab_machines.py",  # a reboot keeps the fabric
    "sparkfab.lab.wire": "tests/lab/test_lab.py",  # cut, swap and flap cables
    "sparkfab.measure.bench.battery": "tests/unit/commands/hostile/test_battery.py",
    "sparkfab.measure.estimate.gloo": "tests/unit/measure/estimate/test_estimate.py",
    "sparkfab.measure.endpoint.http": "tests/slow/test_realserver.py",
    "sparkfab.measure.estimate.model": "tests/unit/measure/estimate/test_estimate.py",
    "sparkfab.measure.estimate.plots": "tests/unit/commands/hostile/test_estimate.py",  # --plot outputs
    "sparkfab.measure.bench.records": "tests/unit/measure/bench/test_bench.py",
    "sparkfab.measure.report.reporttext": "tests/unit/measure/report/test_report.py",
    "sparkfab.measure.bench.runs": "tests/unit/measure/report/test_report.py",
    "sparkfab.plan": "tests/unit/resolve/test_resolve.py",  # the resolved plan, built by load_plan
    "sparkfab.push.env": "tests/unit/push/test_processes.py",
    "sparkfab.render.control": "tests/unit/resolve/test_control_routes.py",
    "sparkfab.render.exporter": "tests/unit/render/test_render.py",  # the goldens (pair-1cable's exporter)
    "sparkfab.render.launch": "tests/unit/render/test_render.py",  # the goldens
    "sparkfab.render.nccl": "tests/unit/render/test_render.py",  # the goldens
    "sparkfab.render.netplan": "tests/unit/render/test_render.py",  # the goldens, read by netplan generate
    "sparkfab.render.text": "tests/unit/render/test_injection.py",
    "sparkfab.render.tree": "tests/unit/render/test_render.py",  # the goldens
    "sparkfab.render.writer": "tests/unit/render/test_render.py",
    "sparkfab.resolve.cables": "tests/unit/resolve/test_resolve.py",  # through load_plan
    "sparkfab.resolve.context": "tests/unit/resolve/test_resolve.py",
    "sparkfab.resolve.hosts": "tests/unit/resolve/test_resolve.py",
    "sparkfab.resolve.rails": "tests/unit/resolve/test_resolve.py",
    "sparkfab.resolve.ranks": "tests/unit/resolve/test_resolve.py",
    "sparkfab.verify.preflight": "tests/lab/test_lab_preflight.py",  # every row against booted Sparks
    "sparkfab.verify.preflight.instance": "tests/lab/test_lab_preflight.py",
    "sparkfab.verify.mesh": "tests/lab/test_lab_control.py",
    "sparkfab.verify.result": "tests/unit/verify/test_lldp.py",  # every check's verdict
}


def _modules() -> dict[str, Path]:
    """Every module of the package with code, by dotted name (a package's docstring-only
    `__init__` and the package's own root are left out)."""
    out = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            if len(parts) == 1 or not _has_code(f):
                continue
        out[".".join(parts)] = f
    return out


def _has_code(f: Path) -> bool:
    for node in ast.parse(f.read_text()).body:
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (doc or future):
            return True
    return False


def mirrored(module: str) -> list[Path]:
    """Where the tests of `module` are found."""
    parts = module.split(".")[1:]
    if (PACKAGE.joinpath(*parts) / "__init__.py").exists():
        return [UNIT.joinpath(*parts) / f"test_{parts[-1]}.py"]
    if parts[0] == "commands":
        verb = parts[-1].removesuffix("_cmds").removesuffix("_cmd")
        return [UNIT / "commands" / f"test_{verb}.py", UNIT / "commands" / "hostile" / f"test_{verb}.py"]
    return [UNIT.joinpath(*parts[:-1]) / f"test_{parts[-1]}.py"]


def _found(module: str) -> bool:
    return any(p.is_file() for p in mirrored(module))


def test_every_module_has_its_test_at_the_mirrored_path_or_is_listed():
    bare = {m: str(mirrored(m)[0].relative_to(REPO)) for m in _modules() if not _found(m) and m not in COVERED}
    assert not bare, f"put each module's tests at its path, or name the test that covers it in COVERED: {bare}"


def test_the_list_only_names_modules_without_their_own_test_and_test_files_that_exist():
    modules = _modules()
    assert not [m for m in COVERED if m not in modules], "COVERED names modules that are gone"
    assert not [f for f in COVERED.values() if not (REPO / f).is_file()], "COVERED names test files that are gone"
    own = [m for m in COVERED if _found(m)]
    assert not own, f"these have their test at the mirrored path now: take them out of COVERED: {own}"


def test_the_rule_maps_each_kind_of_module_to_its_path():
    assert mirrored("sparkfab.cluster.target") == [UNIT / "cluster/test_target.py"]
    assert mirrored("sparkfab.spark") == [UNIT / "test_spark.py"]
    assert mirrored("sparkfab.resolve") == [UNIT / "resolve/test_resolve.py"]
    assert mirrored("sparkfab.commands.bench_cmd") == [
        UNIT / "commands/test_bench.py",
        UNIT / "commands/hostile/test_bench.py",
    ]
    assert "sparkfab.cluster" not in _modules(), "a docstring-only package has nothing to test"
