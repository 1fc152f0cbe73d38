"""sparkfab.cluster.speeds: the link-speed record a cluster's state keeps. The inventory's speed holds
until a flip records another; an instance flipped on its own keeps its own over the cluster's; a
record that cannot be read is refused with the fix, except by the verb that writes it anew, which
drops it and says so; a reset forgets every record."""

from __future__ import annotations

import pytest

from sparkfab.cluster.speeds import at_current_speed, current_link_speed, forget_speeds, save_speeds
from sparkfab.errors import UsageError
from sparkfab.resolve import load_plan
from tests.helpers.inventories import two_instances


@pytest.fixture
def plan(tmp_path_factory):
    return load_plan(two_instances(tmp_path_factory.mktemp("inv")))


def test_the_inventorys_speed_holds_until_a_flip_records_another(plan, tmp_path):
    assert current_link_speed(plan, tmp_path) == plan.link_speed == "200"
    save_speeds(tmp_path, plan, "100e", None)
    assert (tmp_path / "link_speed").read_text() == "100e\n"
    assert current_link_speed(plan, tmp_path) == "100e"
    now = at_current_speed(plan, tmp_path)
    assert now.link_speed == "100e" and {now.mode_of(h.name) for h in now.hosts} == {"100e"}


def test_an_instance_flipped_alone_keeps_its_speed_over_the_clusters(plan, tmp_path):
    first, second = (i.name for i in plan.instances)
    save_speeds(tmp_path, plan.with_instance_speed(first, "100e"), "100e", [first])
    now = at_current_speed(plan, tmp_path)
    assert {now.mode_of(h) for h in now.instance(first).hosts} == {"100e"}
    assert {now.mode_of(h) for h in now.instance(second).hosts} == {"200"}
    # a whole-cluster flip replaces the instance's own record
    save_speeds(tmp_path, plan, "200", None)
    assert not list(tmp_path.glob("link_speed.*"))
    assert at_current_speed(plan, tmp_path).mode_of(plan.instance(first).hosts[0]) == "200"


def test_a_record_that_cannot_be_read_is_refused_except_by_the_verb_that_writes_it(plan, tmp_path, capsys):
    (tmp_path / "link_speed").write_text("fast\n")
    with pytest.raises(UsageError, match=r"`sparkfab linkspeed` \(which writes it anew\) or `sparkfab reset`"):
        current_link_speed(plan, tmp_path)
    assert current_link_speed(plan, tmp_path, mends="linkspeed") == "200"
    assert "dropped: linkspeed goes on as if the hosts ran the inventory's 200" in capsys.readouterr().err
    assert not (tmp_path / "link_speed").exists()


def test_a_reset_forgets_every_record(plan, tmp_path):
    first = plan.instances[0].name
    save_speeds(tmp_path, plan, "100e", None)
    (tmp_path / f"link_speed.{first}").write_text("200\n")
    forget_speeds(tmp_path)
    assert not list(tmp_path.glob("link_speed*")) and current_link_speed(plan, tmp_path) == "200"
