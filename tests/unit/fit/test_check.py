"""validate sizes a vLLM recipe's memory settings against a Spark with `sparkfab fit`: weights that
the memory fraction cannot hold, and a context one request of which does not fit, are warned of
with the figures and the setting that would fit; the seeds' own settings pass."""

from __future__ import annotations

import yaml

from sparkfab import fit
from sparkfab.engines.flags import size_value
from sparkfab.fit.check import vllm_problems
from tests.helpers.inventories import plan_of
from tests.unit.resolve.test_architecture_checks import _switched


def test_sizes_are_read_as_vllms_human_readable_int():
    """vLLM 0.32's argparse_utils.human_readable_int: a lower-case suffix is decimal and takes a
    fraction, an upper-case one binary and does not."""
    said = ["128M", "128m", "1K", "2g", "25.6k", "4096", "1.5K", "x1", ""]
    assert [size_value(x) for x in said] == [128 * 2**20, 128 * 10**6, 1024, 2 * 10**9, 25600, 4096, None, None, None]


def test_the_papers_settings_fit_and_smaller_fractions_do_not():
    glm = fit.presets()["glm-5.3"][0]
    paper = {"gpu-memory-utilization": 0.726, "max-model-len": 262144, "kv-cache-dtype": "fp8"}
    assert vllm_problems(glm, 8, paper) == []
    [weights] = vllm_problems(glm, 8, {**paper, "gpu-memory-utilization": 0.4})
    assert "GB of weights at TP8 x PP1" in weights and "gpu-memory-utilization 0.4 leaves" in weights
    # weights 53.0 GB + runtime 4.3 GB + one 262,144-token request 14.5 GB, of 121.63 GB, and 0.01
    assert weights.endswith("gpu-memory-utilization 0.60 would fit")
    [more] = vllm_problems(glm, 4, paper)
    assert more.endswith("TP8 (more Sparks) at gpu-memory-utilization 0.9 would fit")
    [context] = vllm_problems(glm, 8, {**paper, "gpu-memory-utilization": 0.5, "kv-cache-dtype": "auto"})
    assert context.startswith("max-model-len 262,144 needs 26.25 GB of KV cache")  # bf16: 78 x 1,284 B/token
    assert context.endswith("gpu-memory-utilization 0.70 would fit")


def test_a_fixed_kv_cache_size_bounds_the_context():
    llama = fit.presets()["llama-3.3-70b"][0]
    [x] = vllm_problems(llama, 2, {"kv-cache-memory-bytes": "1G", "max-model-len": 32768})
    assert "kv-cache-memory-bytes leaves 1.07 GB" in x
    # one request: 32,768 tokens x 163,840 B/token at TP2 = 5.4 GB; 1 GiB holds 6,553 of them
    assert "max-model-len 6,553 would fit" in x


def test_validate_warns_with_the_figures(tmp_path, cli):
    data = _switched(8, "glm-5.3-tp8")
    data["all"]["vars"]["sparkfab"]["instances"]["x"]["flags"] = {"gpu-memory-utilization": 0.5}
    [warning] = plan_of(data).instances[0].memory
    assert "max-model-len 262,144" in warning and "(sized from `sparkfab fit` preset glm-5.3)" in warning
    inv = tmp_path / "sw8.yml"
    inv.write_text(yaml.safe_dump(data))
    res = cli("validate", str(inv))
    assert res.code == 0 and f"warning: instance x: {warning}" in res.err
    assert plan_of(_switched(8, "glm-5.3-tp8")).instances[0].memory == ()


def test_an_unknown_fit_preset_in_a_recipe_is_refused(tmp_path, cli):
    from tests.conftest import REPO

    text = (REPO / "inventory/pair-1cable.yml").read_text().replace("launcher: llama-3.3-70b-tp2", "launcher: mine")
    (tmp_path / "pair.yml").write_text(text)
    (tmp_path / "launchers").mkdir()
    (tmp_path / "launchers/mine.yml").write_text(
        "description: mine\nengine: vllm\nimage: vllm/vllm-openai:v0.32.0\nmodel: my-org/m\nfit: llama-70b\n"
    )
    res = cli("validate", str(tmp_path / "pair.yml"))
    assert res.code == 2 and "fit: no preset 'llama-70b'" in res.err and "llama-3.3-70b" in res.err
