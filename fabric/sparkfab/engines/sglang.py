"""SGLang (`python -m sglang.launch_server`): every rank runs the same command with its own
`--node-rank`; ranks meet at `--dist-init-addr HEAD:PORT` (rank 0's). Workers start first and
wait for rank 0, which serves HTTP."""

from __future__ import annotations

from types import MappingProxyType

from sparkfab.engines.base import Engine, Metrics, Oracle, RankArgs, flag_argv


class SGLang(Engine):
    name = "sglang"
    title = "SGLang"
    command = ("python3", "-m", "sglang.launch_server")
    server = "sglang.launch_server"
    #: none: SGLang's CPU backend needs sgl-kernel built from source, which the lab does not do
    lab = None
    secrets = ("HF_TOKEN",)
    #: SGLang 0.5.23 reads its API key only from this flag (no variable), so it has no safe form
    secret_flags = MappingProxyType({"api-key": None, "admin-api-key": None})
    generated_flags = MappingProxyType(
        {
            "model-path": "the recipe's or the instance's model",
            "model": "the recipe's or the instance's model",
            "tp-size": "the instance's tp",
            "tensor-parallel-size": "the instance's tp",
            "nnodes": "the instance's hosts",
            "node-rank": "the cable order",
            "dist-init-addr": "the head's control address and master_port",
            "nccl-init-addr": "the head's control address and master_port",
            "host": "0.0.0.0 on every rank",
            "port": "the instance's port",
        }
    )
    per_rank = ("--node-rank",)
    gloo_coordination = True
    flags_file = "sglang-serve-flags.txt"
    oracle = Oracle("sglang_oracle.py", "SPARKFAB_SGLANG_PYTHON", ".venv-sglang", "sglang")
    #: sglang/srt/observability/metrics_collector.py; /server_info answers its version
    metrics = Metrics(
        "/server_info",
        MappingProxyType(
            {
                "sglang:time_to_first_token_seconds": "server_mean_ttft_ms",
                "sglang:inter_token_latency_seconds": "server_mean_itl_ms",
                "sglang:e2e_request_latency_seconds": "server_mean_e2el_ms",
            }
        ),
    )

    def argv(self, r: RankArgs) -> list[str]:
        argv = [*self.command, "--model-path", r.model, *flag_argv(r.flags), "--tp-size", str(r.tp)]
        if r.nnodes > 1:
            argv += ["--nnodes", str(r.nnodes), "--node-rank", str(r.rank)]
            argv += ["--dist-init-addr", f"{r.dist_addr}:{r.dist_port}"]
        return [*argv, "--host", "0.0.0.0", "--port", str(r.port)]


ENGINE = SGLang()
