"""vLLM as an engine (`engines.vllm`): each rank's argv with its own multi-node flags, the start
order per backend, and what must match on every rank. (That vLLM's own parser takes every launch:
tests/slow/test_launch_vllm.py.)"""

from __future__ import annotations

from sparkfab.engines.base import RankArgs
from sparkfab.engines.vllm import ENGINE as VLLM


def _rank(rank: int, tp: int = 4, backend: str = "mp") -> RankArgs:
    flags = {"max-model-len": 16384, "enforce-eager": True, "enable-prefix-caching": False}
    return RankArgs("/m", flags, tp, tp, rank, backend, "192.168.100.1", 29500, "10.0.0.1", 8000)


def test_each_rank_gets_its_node_rank_and_every_rank_but_0_runs_headless():
    head, worker = VLLM.argv(_rank(0)), VLLM.argv(_rank(2))
    assert head[:3] == ["vllm", "serve", "/m"]
    assert head[head.index("--max-model-len") + 1] == "16384"
    assert "--enforce-eager" in head and "--no-enable-prefix-caching" in head
    assert head[head.index("--node-rank") + 1] == "0" and worker[worker.index("--node-rank") + 1] == "2"
    assert "--headless" not in head and "--headless" in worker
    assert head[head.index("--master-addr") + 1] == "192.168.100.1" and head[-4:] == [
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
    ]
    # what must match on every rank: the same once the per-rank flags are left out
    assert VLLM.engine_flags(head) == VLLM.engine_flags(worker)


def test_ray_and_one_rank_take_no_multi_node_flags():
    for argv in (VLLM.argv(_rank(0, backend="ray")), VLLM.argv(_rank(0, tp=1))):
        assert not {"--nnodes", "--node-rank", "--master-addr", "--headless"} & set(argv)


def test_workers_start_before_rank_0_and_ray_the_other_way_round():
    assert [VLLM.start_order(r, 4, "mp") for r in range(4)] == [1, 0, 0, 0]
    assert [VLLM.start_order(r, 4, "ray") for r in range(4)] == [0, 1, 1, 1]
    assert VLLM.start_order(0, 1, "mp") == 0
    assert VLLM.ready_timeout_s({"VLLM_ENGINE_READY_TIMEOUT_S": "900"}) == 900
