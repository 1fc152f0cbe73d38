"""Hostile and careless input to `sparkfab render`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import pytest
import yaml

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import (
    FIFO,
    PAIR,
    SWITCH100,
    bomb,
    c,
    evil,
    inv,
    pair_inst,
    render,
    setter,
    validate,
    with_recipe,
)

CASES = [
    validate(
        "render-bad-inventory",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="a b")),
        r"ansible_host",
        verb="render {inv} -o {d}/out",
    ),
    render("render-into-inventory-dir", "render {d}/inv.yml -o {d}", 2, r"holds the input"),
    render(
        "render-into-parent-of-inventory",
        "render {d}/cfg/inv.yml -o {d}",
        2,
        r"holds the input",
        files={"cfg/inv.yml": inv()},
    ),
    render(
        "render-into-foreign-dir",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"did not write \(inventory\.yml\)",
        files={"out/inventory.yml": "mine\n"},
    ),
    render(
        "render-into-host-vars",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"host_vars/a\.yml",
        files={"out/host_vars/a.yml": "x\n"},
    ),
    render("render-tmp-files", "render {d}/inv.yml -o {d}/out", 2, r"x\.tmp", files={"out/x.tmp": "x\n"}),
    render("render-empty-o", ("render", "{d}/inv.yml", "-o", ""), 2, r"-o.*empty"),
    render("render-o-file", "render {d}/inv.yml -o {d}/f", 2, r"exists and is not a directory", files={"f": "x"}),
    render("render-o-under-file", "render {d}/inv.yml -o {d}/f/sub", 5, r"f/sub", files={"f": "x"}),
    render("render-o-proc", "render {d}/inv.yml -o /proc/sparkfab-test", 5, r"/proc/sparkfab-test"),
    render(
        "render-link-speed-200-on-100-switch",
        "render {d}/s.yml -o {d}/out --link-speed 200",
        2,
        r"carries",
        files={"s.yml": SWITCH100},
    ),
    render("render-link-speed-bogus", "render {d}/inv.yml -o {d}/out --link-speed 400", 2, r"invalid choice"),
    render("render-new-dir", "render {d}/inv.yml -o {d}/out", 0, r"rendered \d+ files", outputs=("out",)),
    render("render-nested-new", "render {d}/inv.yml -o {d}/a/b/c", 0, r"rendered", outputs=("a",)),
    # J2, J3: a recipe's values reach docker run and the env files as the instance's do
    with_recipe("recipe-shm-subst", evil(shm_size="$(touch P)"), r"shm_size: '\$\(touch P\)' is not a size"),
    with_recipe("recipe-shm-privileged", evil(shm_size="64g --privileged -v /:/host"), r"shm_size.*not a size"),
    with_recipe("recipe-shm-amp", evil(shm_size="1g & touch P"), r"shm_size"),
    with_recipe("recipe-env-newline", evil(env={"A": "x\nSPARKFAB_INJECTED=1"}), r"env\.A"),
    with_recipe("recipe-env-name", evil(env={"A B": "x"}), r"env"),
    with_recipe("recipe-volume-space", evil(volumes=["/a b:/c"]), r"volumes"),
    with_recipe("recipe-flag-name", evil(flags={"max-model-len 5 --x": 1}), r"flags"),
    with_recipe("recipe-entrypoint-newline", evil(entrypoint=["vllm\nserve"]), r"entrypoint"),
    with_recipe("recipe-latin1", evil().encode() + b"# caf\xe9\n", r"evil\.yml:5: not UTF-8"),
    with_recipe("recipe-huge", evil() + "#" + "x" * (9 << 20) + "\n", r"evil\.yml: .*larger than 8 MiB"),
    with_recipe(
        "recipe-alias-bomb",
        evil() + bomb().replace("all:\n  vars:\n", "").replace("    sparkfab: {cluster: x}\n", ""),
        r"evil\.yml",
    ),
    with_recipe("recipe-fifo", FIFO, r"evil\.yml: .*not a regular file"),
    c(
        "collective-in-docker",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"runtime docker runs the recipe's image",
        files={"inv.yml": pair_inst(launcher="lab-collective", runtime="docker")},
    ),
    c(
        "render-o-name-too-long",
        "render {d}/inv.yml -o {d}/" + "n" * 300,
        5,
        r"File name too long",
        files={"inv.yml": yaml.safe_dump(PAIR)},
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
