"""Bytes a rank sends per Gloo all-reduce on the lab's fabric, against the ring formula (root).

    benchmarks/gloo_bytes.py [--inventory inventory/ring4.yml] [--reps 20]

Brings the inventory's lab up (collective engine, nothing to start), applies it, then runs
torch.distributed all-reduces of bf16 tensors from 2 KB to 8 MB on every rank of the first
instance, each rank in its Spark's namespace with the launch env's Gloo interface and master.
Rank 0 counts the bytes it sent on its fabric netdevs and prints them beside the ring payload
S * 2(N-1)/N: the difference is the fixed cost per ring step and the share of headers that
`sparkfab.measure.estimate.gloo.GLOO_STEP_BYTES` and `GLOO_PAYLOAD_OVERHEAD` hold. Tears the lab down.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fabric"))

WORKER = r"""
import glob, json, sys, torch, torch.distributed as dist
rank, world, master, port, reps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
dist.init_process_group("gloo", init_method=f"tcp://{master}:{port}", rank=rank, world_size=world)
devs = json.loads(sys.argv[6])
def tx():
    return sum(int(open(f"/sys/class/net/{d}/statistics/tx_bytes").read()) for d in devs)
for n in (1024, 4096, 16384, 65536, 262144, 1048576, 4194304):
    t = torch.ones(n, dtype=torch.bfloat16)
    dist.barrier(); before = tx()
    for _ in range(reps):
        dist.all_reduce(t)
    dist.barrier(); sent = (tx() - before) / reps
    if rank == 0:
        print(json.dumps({"bytes": n * 2, "sent": sent}), flush=True)
dist.destroy_process_group()
"""


def sparkfab(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "sparkfab", *args], cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"sparkfab {' '.join(args)}: {res.stderr[-2000:]}")
    return res.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inventory", default="inventory/ring4.yml")
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    from sparkfab.engines.recipes import recipes
    from sparkfab.measure.estimate import ring_factor
    from sparkfab.measure.estimate.gloo import gloo_bytes_per_allreduce
    from sparkfab.render.launch import gloo_endpoints
    from sparkfab.resolve import load_plan

    plan = load_plan(args.inventory)
    inst = plan.instances[0]
    assert recipes()["lab-vllm"].tp_backend == "gloo"
    ends = gloo_endpoints(plan, inst)
    n, master = len(inst.ranks), ends[inst.ranks[0].host].ip
    port = str(plan.master_port + 1)  # admitted by a fabric control plane's firewall
    sparkfab("lab", "up", args.inventory, "--engine", "collective")
    try:
        sparkfab("apply", args.inventory, "--lab", "-q")
        procs = []
        for r in sorted(inst.ranks, key=lambda r: -r.rank):  # rank 0 last, in the foreground
            host = plan.host(r.host)
            cmd = [sys.executable, "-m", "sparkfab", "lab", "exec", args.inventory, r.host, "--", "env"]
            cmd += [f"GLOO_SOCKET_IFNAME={ends[r.host].netdev}", sys.executable, "-c", WORKER]
            cmd += [str(r.rank), str(n), master, port, str(args.reps), json.dumps(list(host.fabric_ifs))]
            procs.append(subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        out, _ = procs[-1].communicate(timeout=600)
        for proc in procs[:-1]:
            proc.wait(timeout=60)
    finally:
        sparkfab("lab", "down", args.inventory)
    print(f"{plan.cluster}: TP{n}, ring factor {ring_factor(n):.3f}")
    print(f"{'tensor':>10} {'sent':>12} {'ring payload':>13} {'extra':>8} {'model':>12} {'model err':>9}")
    for line in out.splitlines():
        row = json.loads(line)
        payload, model = row["bytes"] * ring_factor(n), gloo_bytes_per_allreduce(row["bytes"], n)
        print(
            f"{row['bytes']:>10,} {row['sent']:>12,.0f} {payload:>13,.0f} {row['sent'] - payload:>8,.0f} "
            f"{model:>12,.0f} {row['sent'] / model - 1:>+9.2%}"
        )


if __name__ == "__main__":
    main()
