"""An inventory's own launch recipes live in launchers/ beside it; the plan carries the
recipe it resolved, so rendering reads no recipe file."""

from __future__ import annotations

import json
import shutil

from tests.conftest import REPO

MINE = """description: my model at TP2
engine: vllm
image: vllm/vllm-openai:v0.32.0
entrypoint: [vllm, serve]
model: my-org/my-model
flags: {max-model-len: 8192}
"""


def _inventory(tmp_path, launcher: str):
    text = (
        (REPO / "inventory/pair-1cable.yml").read_text().replace("launcher: llama-3.3-70b-tp2", f"launcher: {launcher}")
    )
    (tmp_path / "pair.yml").write_text(text)
    return tmp_path / "pair.yml"


def test_a_recipe_beside_the_inventory_is_found_and_rendered(cli, tmp_path):
    inv = _inventory(tmp_path, "mine")
    res = cli("validate", str(inv))
    assert res.code == 2 and "unknown launcher 'mine'" in res.err and "launchers/ beside the inventory" in res.err
    (tmp_path / "launchers").mkdir()
    (tmp_path / "launchers/mine.yml").write_text(MINE)
    assert cli("validate", str(inv)).code == 0
    assert cli("render", str(inv), "-o", str(tmp_path / "out")).code == 0
    meta = json.loads((tmp_path / "out/spark-b/etc/sparkfab/launch/llama.json").read_text())
    assert meta["argv"][:3] == ["vllm", "serve", "my-org/my-model"] and "--headless" in meta["argv"]


def test_a_recipe_beside_the_inventory_replaces_one_of_the_same_name(cli, tmp_path):
    from sparkfab.resolve import load_plan

    inv = _inventory(tmp_path, "llama-3.3-70b-tp2")
    (tmp_path / "launchers").mkdir()
    (tmp_path / "launchers/llama-3.3-70b-tp2.yml").write_text(MINE)
    rec = load_plan(str(inv)).instances[0].recipe
    assert (
        rec is not None
        and rec.model == "my-org/my-model"
        and rec.source == str(tmp_path / "launchers/llama-3.3-70b-tp2.yml")
    )
    shutil.rmtree(tmp_path / "launchers")
    rec = load_plan(str(inv)).instances[0].recipe
    assert rec is not None and rec.model == "meta-llama/Llama-3.3-70B-Instruct"


def test_a_broken_recipe_is_a_problem_of_the_instance_that_names_the_file(cli, tmp_path):
    inv = _inventory(tmp_path, "mine")
    (tmp_path / "launchers").mkdir()
    (tmp_path / "launchers/mine.yml").write_text(MINE.replace("v0.32.0", "latest"))
    res = cli("validate", str(inv))
    assert res.code == 2 and "launchers/mine.yml: image" in res.err and "pin a tag" in res.err
    assert "instances.llama.launcher" in res.err
    (tmp_path / "launchers/mine.yml").write_text("name: x\n" + MINE)
    res = cli("validate", str(inv))
    assert res.code == 2 and "'name' and 'source' come from the file" in res.err
