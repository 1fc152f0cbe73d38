"""What a bench measures on a cluster (`cluster.measured`): which instances a URL is, the run's
context for run.json at the speed the measured instance runs, and one Spark's counters."""

from __future__ import annotations

import dataclasses

import pytest

from sparkfab import spark
from sparkfab.cluster import measured
from sparkfab.cluster.target import Target
from sparkfab.errors import UsageError
from tests.conftest import REPO
from tests.helpers.inventories import two_instances


def test_the_url_names_the_instance_by_its_port_else_all_of_them(tmp_path):
    inv = two_instances(tmp_path)
    plan = Target.load(inv).plan
    assert [i.name for i in measured.served(plan, "http://10.0.0.3:8001", None)] == ["b"]
    assert [i.name for i in measured.served(plan, "http://10.0.0.1:8000/v1", None)] == ["a"]
    assert [i.name for i in measured.served(plan, "http://10.0.0.1:9999", None)] == ["a", "b"]
    assert [i.name for i in measured.served(plan, "http://10.0.0.1:9999", "b")] == ["b"]


def test_the_context_is_the_measured_instances_own_speed_and_rate(tmp_path):
    inv = str(REPO / "inventory/ring4.yml")
    target = Target.load(inv)
    ctx = measured.context(target, inv, "http://10.0.0.1:8000", None)
    assert ctx == {
        "path": inv, "cluster": target.plan.cluster, "link_speed": "200",
        "link_gbps": spark.LINK_GBPS["200"], "instance": "glm", "tp": 4,
    }  # fmt: skip
    # an instance flipped on its own (`linkspeed --instance`) is measured at its own speed
    glm = target.plan.instances[0]
    flipped = dataclasses.replace(target.plan, host_speeds={h: "100e" for h in glm.hosts})
    ctx = measured.context(dataclasses.replace(target, plan=flipped), inv, "http://x:8000", None)
    assert (ctx["link_speed"], ctx["link_gbps"]) == ("100e", spark.LINK_GBPS["100e"])


def test_a_sparks_counters_at_its_mode_or_every_fabric_netdev():
    inv = str(REPO / "inventory/ring4.yml")
    plan = Target.load(inv).plan
    host = plan.host("spark-329f")
    assert measured.host_devices(inv, "spark-329f", "rdma") == list(host.hca["200"])
    assert measured.host_devices(inv, "spark-329f", "netdev") == list(host.fabric_ifs)
    with pytest.raises(UsageError, match="not a host"):
        measured.host_devices(inv, "spark-nope", "rdma")
