"""TP against the model's architecture for the seeds' own recipes: the GLM-5.3 recipes declare
theirs, so a TP size their heads, vocabulary or FFN do not divide is refused before any Spark is
touched; a recipe that declares none is said to be unchecked, not passed in silence."""

from __future__ import annotations

import pytest

from sparkfab.errors import InventoryError
from tests.helpers.inventories import plan_of, ring


def _switched(n: int, launcher: str) -> dict:
    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(n)}
    cables = [[f"s{i}:p1", f"sw1:{i // 2 + 1}/{i % 2 + 1}"] for i in range(n)]
    inst = {"hosts": list(hosts), "tp": n, "launcher": launcher}
    sf = {"cluster": "t", "switches": {"sw1": {"model": "CRS804"}}, "cables": cables, "instances": {"x": inst}}
    return {"all": {"hosts": hosts, "vars": {"sparkfab": sf}}}


@pytest.mark.parametrize(
    "data,why",
    [
        # the ring write-up: "Unlike TP=3, TP=4 needs no padded checkpoint"
        (ring(3, [("p0", "p1")] * 3), "its 20 attention heads do not divide by 3"),
        (_switched(6, "glm-5.3-tp8"), "its 64 attention heads do not divide by 6"),
    ],
    ids=["flash-ring-recipe-at-tp3", "tp8-recipe-at-tp6"],
)
def test_a_glm_recipe_at_a_tp_its_architecture_refuses(data, why):
    inst = data["all"]["vars"]["sparkfab"]["instances"]["x"]
    inst.setdefault("launcher", "glm-5.3-flash-ring4")
    with pytest.raises(InventoryError) as exc:
        plan_of(data)
    assert why in str(exc.value) and "architecture" in str(exc.value)


def test_the_seeds_tp_sizes_pass_and_say_they_were_checked():
    ring4 = ring(4, [("p1", "p0")] * 4)
    ring4["all"]["vars"]["sparkfab"]["instances"]["x"]["launcher"] = "glm-5.3-flash-ring4"
    assert plan_of(ring4).instances[0].tp_unchecked == ""
    assert plan_of(_switched(8, "glm-5.3-tp8")).instances[0].tp_unchecked == ""


def test_a_model_whose_architecture_is_unknown_is_unchecked_and_says_why(tmp_path, cli):
    """Another model than the recipe's, not on this machine: nothing to check against, said."""
    import yaml

    inv = tmp_path / "tri.yml"
    data = ring(3, [("p0", "p1")] * 3)
    inst = data["all"]["vars"]["sparkfab"]["instances"]["x"]
    inst["launcher"], inst["model"] = "llama-3.3-70b-tp2", "example-org/not-here-7b"
    note = plan_of(data).instances[0].tp_unchecked
    assert note.startswith("TP 3 not checked against example-org/not-here-7b's architecture") and "only" in note

    inv.write_text(yaml.safe_dump(data))
    res = cli("validate", str(inv))
    assert f"note: instance x: {note}" in res.err
