"""Lab-ness comes from the lab, never from the inventory; the ring graph is the ring's default."""

from __future__ import annotations

import shutil

import yaml

from sparkfab.cluster.target import Target, lab_of
from sparkfab.errors import UsageError
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from tests.conftest import REPO
from tests.helpers.inventories import plan_of


def test_only_the_inventory_of_a_lab_that_is_up_is_a_lab(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path / "labs"))
    lab = tmp_path / "labs" / "pair1"
    lab.mkdir(parents=True)
    inv = lab / "inventory.yml"
    shutil.copy(REPO / "inventory/pair-1cable.yml", inv)
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    assert lab_of(inv, "pair1") is None  # no state.json: lab up never finished
    (lab / "state.json").write_text("{}")
    assert lab_of(inv, "pair1") == lab
    target = Target.load(str(inv))
    assert (target.lab, target.state, target.inventory) == (lab, lab / "state", inv)
    copy = tmp_path / "copy.yml"
    shutil.copy(inv, copy)
    assert lab_of(copy, "pair1") is None
    real = Target.load(str(copy))
    assert (real.lab, real.state) == (None, tmp_path / "state/pair1")
    # the roles read the same inventory for a lab's Sparks as for real ones
    assert render(target.plan).inventory.content == render(real.plan).inventory.content


def test_user_inventory_cannot_turn_lab_behaviour_on(cli, tmp_path):
    raw = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    raw["all"]["vars"]["sparkfab_lab"] = True
    f = tmp_path / "ring4.yml"
    f.write_text(yaml.safe_dump(raw))
    res = cli("apply", str(f), "--check")
    assert res.code == 2 and "all.vars.sparkfab_lab: reserved" in res.err


def test_ring_graph_is_on_by_default_on_rings_only():
    assert load_plan(str(REPO / "inventory/ring4.yml")).nccl_graph is True
    for name in ("triangle", "pair-1cable", "switch8-crs804-200"):
        assert load_plan(str(REPO / f"inventory/{name}.yml")).nccl_graph is False, name
    raw = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    raw["all"]["vars"]["sparkfab"]["nccl_graph"] = False
    assert plan_of(raw).nccl_graph is False


def test_the_recorded_link_speed_is_read_back_and_a_bad_one_is_named(cli, tmp_path, monkeypatch):
    """A flip is recorded in the cluster's state and every later verb starts from it; a state file
    that no longer names a mode is a usage error naming the file, before any host is reached."""
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path))
    inv = str(REPO / "inventory/ring4.yml")
    (tmp_path / "ring4").mkdir()
    (tmp_path / "ring4/link_speed").write_text("100e\n")
    (tmp_path / "ring4/link_speed.glm").write_text("200\n")
    target = Target.load(inv)
    assert target.plan.link_speed == "100e" and {target.plan.mode_of(h) for h in target.plan.instances[0].hosts} == {
        "200"
    }
    (tmp_path / "ring4/link_speed").write_text("fast\n")
    res = cli("verify", inv)
    assert res.code == 2 and f"{tmp_path}/ring4/link_speed: link speed 'fast': one of 200, 100e, 100" in res.err


def test_a_bad_record_is_dropped_by_the_verbs_that_write_it_anew_only(tmp_path, monkeypatch, capsys):
    """An emptied or garbled speed record stops `apply` and `verify` (they would push or check
    the wrong files), but not `linkspeed` and `reset`, the fixes the refusal names: they drop it,
    say so, and go on from the inventory's speed (an instance's record as the cluster's)."""
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path))
    inv = str(REPO / "inventory/ring4.yml")
    state = tmp_path / "ring4"
    state.mkdir()
    for verb in ("apply", "serve start"):
        (state / "link_speed").write_text("")
        try:
            with Target.held(inv, verb):
                raise AssertionError(f"{verb} took an empty record")
        except UsageError as exc:
            assert "link_speed" in str(exc) and "sparkfab linkspeed" in str(exc)
        assert (state / "link_speed").exists()
    for verb in ("linkspeed", "reset"):
        (state / "link_speed").write_text("\x00\xff garbage\n")
        (state / "link_speed.glm").write_text("fast\n")
        with Target.held(inv, verb) as target:
            assert target.plan.link_speed == "200"
            assert {target.plan.mode_of(h) for h in target.plan.instance("glm").hosts} == {"200"}
        assert not (state / "link_speed").exists() and not (state / "link_speed.glm").exists()
        err = capsys.readouterr().err
        assert f"{state}/link_speed: " in err and f"dropped: {verb} goes on" in err
