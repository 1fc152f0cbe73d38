"""The engine's NCCL network, read from its log: IB/RoCE passes, a fall-back to sockets fails,
a log without NCCL lines (a CPU engine, NCCL_DEBUG unset) is not judged."""

from __future__ import annotations

from sparkfab.resolve import load_plan
from sparkfab.verify import transport
from sparkfab.verify.result import FAIL, PASS
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


def test_a_log_without_nccl_lines_is_not_judged():
    inst = load_plan(str(REPO / "inventory/ring4.yml")).instances[0]
    assert transport.judge(inst, "spark-329f", transport.parse("INFO vLLM API server started\n")) is None


def test_the_log_is_read_where_the_runtime_keeps_it():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    assert transport.log_command(inst).startswith("docker logs sparkfab-glm 2>&1 | grep -E ")
