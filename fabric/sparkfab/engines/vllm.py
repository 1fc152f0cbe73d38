"""vLLM (`vllm serve`): multi-node with its own processes (`--nnodes`, `--node-rank`,
`--master-addr`, `--headless` workers that wait for rank 0) or with Ray (head first)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sparkfab.engines.base import Engine, LabServing, Metrics, Oracle, RankArgs, flag_argv


class VLLM(Engine):
    name = "vllm"
    title = "vLLM"
    command = ("vllm", "serve")
    server = "vllm serve"
    secrets = ("HF_TOKEN", "VLLM_API_KEY")
    api_key_env = "VLLM_API_KEY"  # vLLM then requires `Authorization: Bearer KEY` on /v1/*
    secret_flags = MappingProxyType({"api-key": "VLLM_API_KEY", "hf-token": "HF_TOKEN"})
    generated_flags = MappingProxyType(
        {
            "tensor-parallel-size": "the instance's tp",
            "distributed-executor-backend": "the instance's backend",
            "nnodes": "the instance's hosts",
            "node-rank": "the cable order",
            "master-addr": "the head's control address",
            "master-port": "master_port",
            "headless": "every rank but 0",
            "host": "0.0.0.0 on every rank",
            "port": "the instance's port",
        }
    )
    per_rank = ("--node-rank",)
    per_rank_switches = ("--headless",)
    flags_file = "vllm-serve-flags.txt"
    oracle = Oracle("vllm_oracle.py", "SPARKFAB_VLLM_PYTHON", ".venv-vllm", "vllm")
    metrics = Metrics(
        "/version",
        MappingProxyType(
            {
                "vllm:time_to_first_token_seconds": "server_mean_ttft_ms",
                "vllm:inter_token_latency_seconds": "server_mean_itl_ms",
                "vllm:request_prefill_time_seconds": "server_mean_prefill_ms",
                "vllm:e2e_request_latency_seconds": "server_mean_e2el_ms",
            }
        ),
    )
    #: vllm/envs.py: VLLM_ENGINE_READY_TIMEOUT_S, 600 s when unset
    ready_timeout_env = "VLLM_ENGINE_READY_TIMEOUT_S"
    host_ip_env = "VLLM_HOST_IP"
    ray = True
    #: the lab serves vLLM's CPU build (`.venv-vllm`) in Docker, with a Spark's multi-node flags;
    #: with its own backend only: the CPU platform refuses Ray ("current platform cpu does not
    #: support ray", vllm/v1/executor/ray_utils.py: it has no `ray_device_key`)
    lab = LabServing(
        "lab-vllm",
        "docker",
        "vllm.entrypoints.cli.main",
        MappingProxyType({"VLLM_TARGET_DEVICE": "cpu"}),
        backends=("mp",),
    )

    def ignored(self, flags: Mapping[str, Any]) -> list[str]:
        if "draft_tensor_parallel_size" not in str(flags.get("speculative-config", "")):
            return []
        return [
            "sets draft_tensor_parallel_size in --speculative-config, which vLLM's V1 engine is reported to "
            "ignore (vLLM issue #17499, open; the PR that would honour it was closed unmerged): the draft runs "
            "at the target's TP, and its all-reduces cross the fabric"
        ]

    def memory_problems(self, shape: Any, tp: int, flags: Mapping[str, Any], on_disk: int | None) -> list[str]:
        from sparkfab.fit.check import vllm_problems

        return vllm_problems(shape, tp, dict(flags), on_disk)

    def argv(self, r: RankArgs) -> list[str]:
        argv = [
            *self.command,
            r.model,
            *flag_argv(r.flags),
            "--tensor-parallel-size",
            str(r.tp),
            "--distributed-executor-backend",
            r.backend,
        ]
        if r.backend == "mp" and r.tp > 1:
            argv += ["--nnodes", str(r.nnodes), "--node-rank", str(r.rank)]
            argv += ["--master-addr", r.dist_addr, "--master-port", str(r.dist_port)]
            if r.rank > 0:
                argv.append("--headless")
        return [*argv, "--host", "0.0.0.0", "--port", str(r.port)]


ENGINE = VLLM()
