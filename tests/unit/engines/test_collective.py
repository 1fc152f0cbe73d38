"""The lab's collective workload as an engine (`engines.collective`): a process per rank that meets
rank 0 at its management address and answers on the instance's port."""

from __future__ import annotations

from sparkfab.engines.base import RankArgs
from sparkfab.engines.collective import ENGINE as COLLECTIVE


def test_each_rank_knows_its_rank_the_world_and_where_rank_0_is():
    argv = COLLECTIVE.argv(RankArgs("-", {}, 2, 2, 1, "mp", "192.168.100.1", 29500, "10.0.0.1", 8000))
    assert argv[0] == "python3" and argv[2] == "serve"
    pairs = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert pairs == {"--rank": "1", "--world-size": "2", "--master-addr": "10.0.0.1", "--master-port": "29500",
                     "--http-port": "8000"}  # fmt: skip
    assert COLLECTIVE.default_runtime == "process" and not COLLECTIVE.needs_image
