"""verify --perf's all-reduce mark: the mode's, from healthy clusters' measured range less a stated
margin, or the inventory's own; the perftest ports are what the firewall admits."""

from __future__ import annotations

import re

import yaml

from sparkfab import spark
from sparkfab.render import control
from sparkfab.resolve import load_plan
from sparkfab.verify import perf
from tests.conftest import REPO


def test_the_mark_sits_under_the_measured_range_and_an_inventory_may_set_its_own(tmp_path):
    plan = load_plan(str(REPO / "inventory/switch8-crs804-200.yml"))
    mark = perf.busbw_mark(plan, plan.instances[0])
    assert mark == spark.SPEEDS["200"].busbw_pass_gbps < spark.BUSBW_MEASURED_200[0]
    doc = yaml.safe_load((REPO / "inventory/switch8-crs804-200.yml").read_text())
    doc["all"]["vars"]["sparkfab"]["perf_tools"] = {"busbw_min_gbps": 150}
    own = tmp_path / "own.yml"
    own.write_text(yaml.safe_dump(doc))
    plan = load_plan(str(own))
    assert perf.busbw_mark(plan, plan.instances[0]) == 150


def test_the_ring_firewall_admits_perftests_ports_from_fabric_subnets():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    ports = control.control_ports(plan, plan.hosts[0])
    assert (
        control.PERFTEST_PORTS in ports and control.PERFTEST_BASE + 10 < control.PERFTEST_BASE + control.PERFTEST_COUNT
    )


def test_perf_runs_each_rank_with_its_own_nccl_env():
    from sparkfab.verify.perf import all_reduce_command

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    cmd = all_reduce_command(plan, inst)
    exported = re.findall(r" -x (\S+)", cmd)
    assert set(exported) == {"LD_LIBRARY_PATH", "UCX_NET_DEVICES", "MASTER_ADDR", "MASTER_PORT"}, (
        "no NCCL variable copied from the head"
    )
    assert "/etc/sparkfab/nccl.env" in cmd and "export" in cmd and 'exec "$0"' in cmd
    assert '"$HOME"/nccl-tests/build/all_reduce_perf' in cmd and '"$HOME"/nccl/build/lib' in cmd
    hosts = [h.split(":")[0] for h in re.search(r"mpirun -np \d+ -H (\S+)", cmd).group(1).split(",")]
    assert hosts == [plan.host(h).mgmt_address for h in inst.hosts], "ranks in cable order"
    assert f"btl_tcp_if_include {plan.host(inst.hosts[0]).mgmt_if}" in cmd
