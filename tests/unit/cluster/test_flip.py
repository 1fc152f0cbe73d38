"""A link-speed flip decided below the verb (`sparkfab.cluster.flip`): the hosts and instances it
covers, the plan after it, its push's limit and its record, from one Target."""

from __future__ import annotations

import pytest

from sparkfab.cluster.flip import plan_flip
from sparkfab.cluster.target import Target
from sparkfab.errors import InventoryError, UsageError
from tests.helpers.inventories import two_instances


@pytest.fixture
def target(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    return Target.load(two_instances(tmp_path))


def test_a_whole_cluster_flip_has_no_limit_and_records_the_cluster_speed(target):
    flip = plan_flip(target, "100e", None, None)
    assert flip.instances is None and flip.limit is None and flip.hosts == ("s0", "s1", "s2", "s3")
    assert (flip.was, flip.after.link_speed, flip.after.host_speeds, flip.scope) == ("200", "100e", {}, "two")
    assert flip.hca_changes()[0] == ("s0", "rocep1s0f1,roceP2p1s0f1", "rocep1s0f1")
    assert flip.record(target) is None  # no lab: nothing shaped
    assert (target.state / "link_speed").read_text() == "100e\n"
    again = Target.load(str(target.inventory))
    assert plan_flip(again, "100e", None, None).hca_changes() == []  # the recorded speed is the one read back


def test_an_instance_flip_limits_the_push_to_its_hosts(target):
    flip = plan_flip(target, "100e", "b", None)
    assert (flip.instances, flip.hosts, flip.limit) == (("b",), ("s2", "s3"), "s2,s3")
    assert flip.after.host_speeds == {"s2": "100e", "s3": "100e"} and flip.after.link_speed == "200"
    assert [h for h, _, _ in flip.hca_changes()] == ["s2", "s3"] and flip.scope == "two (b)"
    flip.record(target)
    assert (target.state / "link_speed.b").read_text() == "100e\n" and not (target.state / "link_speed").exists()
    mixed = plan_flip(Target.load(str(target.inventory)), "200", None, None)
    assert mixed.was == "100e/200"


def test_a_limit_is_matched_as_ansible_matches_it_and_covers_whole_instances(target):
    assert plan_flip(target, "100e", None, "~s[01]").instances == ("a",)
    with pytest.raises(UsageError, match="leaves out s1 of a"):
        plan_flip(target, "100e", None, "s0")


def test_the_cluster_is_validated_at_the_new_speed(tmp_path, monkeypatch):
    """Sixteen Sparks on a CRS804 fit only at 100G lanes: a flip to 200 is refused before any host is touched."""
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    from tests.conftest import REPO

    t = Target.load(str(REPO / "inventory/switch16-crs804-100.yml"))
    with pytest.raises(InventoryError, match="carries 8 at 200G"):
        plan_flip(t, "200", None, None)


def test_a_failure_in_the_flips_check_is_before_any_change_and_one_in_serving_after_the_push():
    """The flip's check is serve's probe (linkspeed.yml's first play): a host that fails or does
    not answer there stops the flip before any host changed; a serve task after the push means the
    push went everywhere. The name is the one the role's task has."""
    import yaml

    from sparkfab.commands.deploy_cmd import _serving
    from sparkfab.push.tasks import SERVE_PROBE
    from tests.conftest import REPO

    tasks = yaml.safe_load((REPO / "roles/sparkfab_serve/tasks/state.yml").read_text())
    assert [t["name"] for t in tasks] == [SERVE_PROBE]
    assert not _serving(SERVE_PROBE) and not _serving("Files | NCCL environment")
    assert _serving("Serve | Start a rank of the first wave") and _serving("Serve | Every rank of the instance answers")
