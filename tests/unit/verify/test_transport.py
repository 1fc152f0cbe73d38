"""The engine's NCCL network, read from its log: IB/RoCE passes, a fall-back to sockets fails,
a log without NCCL lines (a CPU engine, NCCL_DEBUG unset) is a row that says it is not judged."""

from __future__ import annotations

import pytest

from sparkfab.render import nccl
from sparkfab.resolve import load_plan
from sparkfab.verify import transport
from sparkfab.verify.result import FAIL, PASS, SKIP
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"

#: lines as NCCL prints them on RoCE, written from its format strings (NVIDIA/nccl at 5067397c:
#: src/transport/net_ib/init.cc "NET/IB : Using%s %s; OOB %s:%s", src/init.cc "Using network
#: %s", src/transport/net.cc "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s")
#: with a Spark's devices; the socket lines below are a real run's (captured)
IB_LOG = """\
spark-01:4121:4121 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so
s01:4121:4121 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enP7s7:10.0.1.11<0>
spark-01:4121:4121 [0] NCCL INFO Using network IB
spark-01:4121:4190 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
spark-01:4121:4190 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA
spark-01:4121:4190 [0] NCCL INFO Channel 00/0 : 7[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
"""


def test_ib_is_read_with_its_devices():
    t = transport.parse(IB_LOG)
    assert t.networks == ("IB",) and t.channels == {"IB": 3} and t.devices == ("rocep1s0f1", "roceP2p1s0f1")
    inst = load_plan(str(REPO / "inventory/switch8-crs804-200.yml")).instances[0]
    row = transport.judge(inst, "spark-01", t)
    assert row is not None and row.status == PASS and row.actual == "NET/IB (rocep1s0f1, roceP2p1s0f1)"


def test_a_fall_back_to_sockets_in_a_real_log_fails():
    log = (CAPTURED / "torch_nccl_socket_debug_2xH200.log").read_text()
    t = transport.parse(log)
    assert "Socket" in t.networks and t.channels.get("Socket", 0) >= 2 and t.sockets
    inst = load_plan(str(REPO / "inventory/ring4.yml")).instances[0]
    row = transport.judge(inst, "spark-329f", t)
    assert row is not None and row.status == FAIL and row.actual == "NET/Socket"
    assert "fell back to TCP sockets" in row.detail


def test_a_log_without_nccl_lines_is_a_row_not_judged_never_silence():
    inst = load_plan(str(REPO / "inventory/ring4.yml")).instances[0]
    row = transport.judge(inst, "spark-329f", transport.parse("INFO vLLM API server started\n"))
    assert row.status == SKIP and row.detail.startswith("not judged: ") and "NCCL_DEBUG_SUBSYS=INIT,NET" in row.detail


def test_nccls_own_log_at_sparkfabs_settings_has_what_the_check_reads():
    """A real NCCL 2.28.9 run (torch 2.11, one H100, sockets on loopback: benchmarks/nccl_debug_lines.py)
    with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET, as every rendered nccl.env sets them: the
    network lines are there (95 lines in all against 98 with every subsystem)."""
    log = (CAPTURED / "nccl_debug_init_net_1xH100.log").read_text()
    t = transport.parse(log)
    assert t.networks == ("Socket",) and t.sockets
    inst = load_plan(str(REPO / "inventory/ring4.yml")).instances[0]
    assert transport.judge(inst, "spark-329f", t).status == FAIL


@pytest.mark.parametrize("inventory", sorted(p.name for p in (REPO / "inventory").glob("*.yml")))
def test_every_rendered_nccl_env_asks_for_the_lines(inventory):
    plan = load_plan(str(REPO / "inventory" / inventory))
    for host in plan.hosts:
        env = dict(nccl.env_vars(plan, host, plan.instance_of(host.name)))
        assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,NET"


def test_the_log_is_read_where_the_runtime_keeps_it():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    assert transport.log_command(inst).startswith("docker logs sparkfab-glm 2>&1 | grep -E ")
