"""SGLang as an engine (`engines.sglang`): each rank's argv, its rendezvous as host:port, and no
multi-node flags on one node. (SGLang's own parser on every launch: tests/slow/test_launch_sglang.py.)"""

from __future__ import annotations

from sparkfab.engines.base import RankArgs
from sparkfab.engines.sglang import ENGINE as SGLANG


def test_each_rank_meets_the_head_at_its_address_and_port():
    r1 = SGLANG.argv(
        RankArgs("/m", {"mem-fraction-static": 0.8}, 2, 2, 1, "mp", "192.168.100.1", 29500, "10.0.0.1", 30000)
    )
    assert r1[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "/m"]
    assert r1[r1.index("--dist-init-addr") + 1] == "192.168.100.1:29500" and r1[r1.index("--node-rank") + 1] == "1"
    assert r1[r1.index("--mem-fraction-static") + 1] == "0.8" and r1[r1.index("--tp-size") + 1] == "2"
    r0 = SGLANG.argv(
        RankArgs("/m", {"mem-fraction-static": 0.8}, 2, 2, 0, "mp", "192.168.100.1", 29500, "10.0.0.1", 30000)
    )
    assert SGLANG.engine_flags(r0) == SGLANG.engine_flags(r1)


def test_one_node_takes_no_multi_node_flags():
    argv = SGLANG.argv(RankArgs("/m", {}, 1, 1, 0, "mp", "a", 1, "b", 30000))
    assert not {"--nnodes", "--node-rank", "--dist-init-addr"} & set(argv)
