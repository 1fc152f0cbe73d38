"""backend: ray copies rank 0's NCCL_* variables to every worker (vLLM's ray_env copies the NCCL_
prefix): refused where the ranks need values of their own, allowed where they are one."""

from __future__ import annotations

import pytest
import yaml

from sparkfab.errors import InventoryError
from sparkfab.resolve import load_plan
from tests.conftest import REPO
from tests.helpers.inventories import MIXED4, plan_of, ring


def test_ray_on_a_ring_is_refused_with_the_values_it_would_copy():
    data = ring(4, MIXED4, control_plane="fabric")
    data["all"]["vars"]["sparkfab"]["instances"]["x"] |= {"launcher": "llama-3.3-70b-tp2", "backend": "ray", "tp": 4}
    data["all"]["vars"]["sparkfab"]["instances"]["x"]["model"] = "example-org/any-model"
    with pytest.raises(InventoryError) as exc:
        plan_of(data)
    text = str(exc.value)
    assert "instances.x.backend: backend ray copies rank 0's NCCL_* variables" in text
    assert "NCCL_SOCKET_IFNAME (s0: " in text and "hint: use backend: mp" in text


def test_ray_where_every_rank_has_the_same_nccl_values_is_planned(tmp_path):
    """The paper's TP8 recipe runs on Ray behind a switch: one socket netdev, one HCA list."""
    assert load_plan(str(REPO / "inventory/switch8-crs804-200.yml")).instances[0].backend == "ray"
    data = yaml.safe_load((REPO / "inventory/pair-1cable.yml").read_text())
    data["all"]["vars"]["sparkfab"]["instances"]["llama"]["backend"] = "ray"
    assert plan_of(data).instances[0].backend == "ray"
