"""NCCL's own log at sparkfab's debug settings, from a real NCCL run on a GPU machine: the lines
verify's transport check reads are printed with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET
(what render/nccl.py writes), and the log stays small. Run on a machine with one or more NVIDIA
GPUs (the device tool's): one process per GPU, an all-reduce over NCCL with sockets on loopback
(no RDMA device there), once with sparkfab's settings and once with NCCL_DEBUG=INFO alone; the
logs go to OUT (argv[1])."""

import os
import subprocess
import sys

CHILD = r"""
import os, torch, torch.distributed as dist
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(rank % torch.cuda.device_count())
dist.init_process_group("nccl", rank=rank, world_size=world)
x = torch.ones(1 << 20, device="cuda")
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
assert x[0].item() == world ** 20, x[0].item()
dist.destroy_process_group()
"""


def run(tag: str, extra: dict[str, str], world: int, out: str) -> None:
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29533",
        "WORLD_SIZE": str(world),
        "NCCL_SOCKET_IFNAME": "lo",
        "NCCL_IB_DISABLE": "1",
        "NCCL_NVLS_ENABLE": "0",
        **extra,
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD],
            env={**env, "RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(world)
    ]
    logs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    text = "".join(logs)
    with open(os.path.join(out, f"nccl_{tag}.log"), "w") as f:
        f.write(text)
    print(tag, "lines:", len(text.splitlines()), "'Using network':", text.count("Using network"))


if __name__ == "__main__":
    import torch

    out = sys.argv[1]
    world = max(1, torch.cuda.device_count())
    run("sparkfab", {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}, world, out)
    run("info_all", {"NCCL_DEBUG": "INFO"}, world, out)
