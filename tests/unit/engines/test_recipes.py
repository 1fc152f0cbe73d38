"""What validate says of a recipe itself: an architecture not from its model's own config, and a
setting its engine is known to ignore."""

from __future__ import annotations

from sparkfab.engines.recipes import recipes
from tests.conftest import REPO


def _recipes():
    return recipes((REPO / "launchers",))


def test_the_ring_recipe_says_its_architecture_is_another_models():
    notes = _recipes()["glm-5.3-flash-ring4"].notes()
    assert len(notes) == 1 and "GLM-4.7-Flash's published config" in notes[0]


def test_the_tp8_recipe_says_vllm_ignores_the_draft_tp():
    notes = _recipes()["glm-5.3-tp8"].notes()
    assert len(notes) == 1 and "#17499" in notes[0] and "target's TP" in notes[0]


def test_a_recipe_with_its_own_config_says_nothing():
    assert _recipes()["llama-3.3-70b-tp2"].notes() == []
