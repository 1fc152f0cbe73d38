"""Every SGLang launch command meets SGLang's own argument parser, as the container runs it.

For every SGLang recipe x example inventory x link speed, the rendered `docker run` line is read
back the way docker reads it, and the argv the container executes goes through the parser of
`python -m sglang.launch_server` and the server arguments SGLang builds from it (the SGLang in
.venv-sglang, made by scripts/setup.sh; fabric/sparkfab/assets/sglang_oracle.py is the bridge,
the same one `sparkfab validate` runs).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sparkfab.engines.recipes import recipes
from sparkfab.errors import InventoryError
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from tests.conftest import EXAMPLES, REPO
from tests.slow.test_launch_vllm import _with_recipe, executed

SGLANG_PY = Path(os.environ.get("SPARKFAB_SGLANG_PYTHON") or REPO / ".venv-sglang/bin/python")
ORACLE = REPO / "fabric/sparkfab/assets/sglang_oracle.py"
SGLANG_RECIPES = sorted(n for n, r in recipes().items() if r.engine == "sglang")


def sglang_parse(argvs: list[list[str]]) -> list[dict]:
    if not SGLANG_PY.exists():
        pytest.skip("no SGLang environment (.venv-sglang, made by scripts/setup.sh)")
    res = subprocess.run(
        [str(SGLANG_PY), str(ORACLE), "check"],
        input=json.dumps({"launches": [{"argv": a, "model_dir": None} for a in argvs]}),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(res.stdout.splitlines()[-1])["results"]


def test_the_flag_table_is_sglangs_own():
    if not SGLANG_PY.exists():
        pytest.skip("no SGLang environment (.venv-sglang)")
    table = REPO / "launchers/sglang-serve-flags.txt"
    res = subprocess.run(
        [str(SGLANG_PY), str(ORACLE), "flags", "--out", str(table), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, f"stale: run {ORACLE.name} flags with SGLang's Python\n{res.stderr[-800:]}"


def test_every_sglang_launch_of_every_example_parses_with_sglangs_parser(tmp_path):
    launches = []
    for path in EXAMPLES:
        for name in SGLANG_RECIPES:
            rec = recipes()[name]
            inv = _with_recipe(path, name, tmp_path)
            try:
                base = load_plan(str(inv))
            except InventoryError as exc:  # Llama's 64 heads at TP 3 (the triangle)
                assert "choose a TP size the checkpoint divides into" in str(exc), (path, name, exc)
                continue
            for speed in ["200", "100e"] if base.link_speed != "100" else ["100"]:
                for host, files in render(load_plan(str(inv), speed), {}).hosts.items():
                    by_path = {f.path: f.content for f in files}
                    for p, content in by_path.items():
                        if p.endswith(".json") and "/launch/" in p:
                            meta = json.loads(content)
                            argv = executed(by_path[p.replace(".json", ".sh")], rec.image, rec.entrypoint)
                            assert argv == meta["argv"], (path.stem, host, argv[:4])
                            launches.append((f"{path.stem}/{name}/{speed}/{host}", argv))
    assert {label.split("/")[1] for label, _ in launches} == set(SGLANG_RECIPES) and len(launches) > 50
    # ranks differ only in --node-rank; the head's address and port are the same on every rank
    ring = [argv for label, argv in launches if label.startswith("ring4-sglang/sglang-glm-5.3-flash-ring4/200/")]
    assert sorted(a[a.index("--node-rank") + 1] for a in ring) == ["0", "1", "2", "3"]
    assert len({a[a.index("--dist-init-addr") + 1] for a in ring}) == 1
    results = sglang_parse([argv for _, argv in launches])
    bad = [(label, r["error"]) for (label, _), r in zip(launches, results, strict=True) if not r["ok"]]
    assert not bad, bad[:5]
    # the parser is not a rubber stamp: a flag it does not know, or vLLM's spelling, is refused
    wrong = sglang_parse([[*launches[0][1], "--no-such-flag"], [*launches[0][1], "--max-model-len", "4096"]])
    assert all(not r["ok"] and "unrecognized arguments" in r["error"] for r in wrong), wrong


def test_validate_has_sglang_judge_every_sglang_launch(cli, monkeypatch, tmp_path):
    if not SGLANG_PY.exists():
        pytest.skip("no SGLang environment (.venv-sglang)")
    monkeypatch.setenv("SPARKFAB_ORACLE", "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    res = cli("validate", str(REPO / "inventory/ring4-sglang.yml"))
    assert res.code == 0, res.err
    assert "every launch parsed by SGLang 0.5.23" in res.err
    assert len(list((tmp_path / "cache/sparkfab/oracle").glob("*.json"))) == 4
