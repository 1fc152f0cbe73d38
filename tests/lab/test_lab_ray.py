"""Ray in the lab, the way a Ray recipe starts on Sparks: `serve start` starts the head before its
workers (proved by when the containers started), and a worker started before its head (the
play order sparkfab used to have) waits for it instead of exiting for good.

vLLM's CPU build itself refuses the Ray executor ("current platform cpu does not support ray",
vllm/v1/executor/ray_utils.py: the CPU platform has no `ray_device_key`), so the head's `vllm
serve` exits after it joined the Ray cluster; serve's health wait then ends at once with
vLLM's words instead of waiting out the recipe's timeout. Ray itself, its head and workers
across two lab Sparks, is real (Ray from PyPI in .venv-vllm)."""

from __future__ import annotations

import os
import time
from datetime import UTC
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.lab import lab, requires_lab, sparkfab, ssh

VLLM_PY = Path(os.environ.get("SPARKFAB_VLLM_PYTHON") or REPO / ".venv-vllm/bin/python")
pytestmark = [
    pytest.mark.xdist_group("rayp"),
    pytest.mark.lab,
    pytest.mark.slow,
    requires_lab,
    pytest.mark.skipif(not (VLLM_PY.parent / "ray").exists(), reason="no Ray in .venv-vllm (scripts/setup.sh)"),
]
CLUSTER = "rayp"
STARTED = "docker inspect -f '{{.State.StartedAt}}' sparkfab-llama"
RUNNING = "docker inspect -f '{{.State.Running}}' sparkfab-llama"


def _inventory(tmp_path: Path) -> str:
    data = yaml.safe_load((REPO / "inventory/pair-1cable.yml").read_text())
    data["all"]["vars"]["sparkfab"]["cluster"] = CLUSTER
    data["all"]["vars"]["sparkfab"]["instances"]["llama"]["backend"] = "ray"
    path = tmp_path / "ray.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _started(text: str) -> float:
    """Docker's StartedAt (RFC 3339 with nanoseconds) as seconds."""
    from datetime import datetime

    day, frac = text.strip().rstrip("Z").split(".")
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() + float("0." + frac)


@pytest.mark.alone
def test_ray_head_first_and_a_worker_that_waits_for_a_late_head(tmp_path):
    inv = _inventory(tmp_path)
    with lab(inv, CLUSTER, "vllm", "--keep-ray"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        head, worker = "spark-a", "spark-b"
        # the worker first, its head late on purpose (longer than `ray start` tries on its own)
        assert ssh(CLUSTER, worker, "/etc/sparkfab/launch/llama.sh").returncode == 0
        time.sleep(40)
        assert ssh(CLUSTER, worker, RUNNING).stdout.strip() == "true"
        t0 = time.monotonic()
        late = sparkfab("serve", "start", inv, "--lab", "-q")
        assert late.code == 3 and "does not support ray" in late.err, late.err
        assert time.monotonic() - t0 < 240  # the dead engine ends the wait, not the recipe's timeout
        joined = ssh(CLUSTER, worker, "docker logs sparkfab-llama 2>&1").stdout
        assert "Ray runtime started" in joined, joined[-2000:]
        connected = ssh(CLUSTER, head, "docker logs sparkfab-llama 2>&1").stdout
        assert "Connected to Ray cluster" in connected and "does not support ray" in connected

        # a fresh start: the head's container starts before the worker's
        assert sparkfab("serve", "stop", inv, "--lab", "-q").code == 0
        again = sparkfab("serve", "start", inv, "--lab", "-q")
        assert again.code == 3
        first, second = (_started(ssh(CLUSTER, h, STARTED).stdout) for h in (head, worker))
        assert first < second, (first, second)
        assert sparkfab("serve", "stop", inv, "--lab", "-q").code == 0
