#!/usr/bin/env bash
# The NCCL path of `verify --collective`, for real on GPUs: fabric/sparkfab/assets/collective.py,
# one process per GPU, over NVLink and over NCCL's socket transport (loopback), with NCCL's
# own log. Usage (on a machine with 2 GPUs): benchmarks/gpu_collective.sh OUTDIR
set -euo pipefail
out=${1:-/tmp/sparkfab-gpu}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
sizes=4K,64K,1M,16M,64M,256M,1G
run() {  # name, port, extra env...
  local name=$1 port=$2; shift 2
  for r in 0 1; do
    env "$@" LOCAL_RANK=$r NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE="$out/$name-nccl-rank$r.log" python3 fabric/sparkfab/assets/collective.py run \
      --rank $r --world-size 2 --master-addr 127.0.0.1 --master-port "$port" --backend nccl \
      --sizes $sizes --iters 20 --warmup 5 >"$out/$name-rank$r.json" 2>"$out/$name-rank$r.log" &
  done
  local rc=0
  wait -n || rc=$?
  wait -n || rc=$?
  echo "$name: ranks exited ($rc)"
  grep -h "via NET\|via P2P\|NET/Socket : Using\|NCCL version" "$out/$name-nccl-rank0.log" | head -4 || true
  python3 -c "import json,sys; d=json.loads([l for l in open('$out/$name-rank0.json') if l.startswith('{')][-1]); print('$name', 'correct' if d['all_ranks_ok'] else 'WRONG'); [print(f\"  {r['bytes']:>11} B {r['time_us']:>10.1f} us algbw {r['algbw_GBps']:8.2f} GB/s busbw {r['busbw_GBps']:8.2f} GB/s\") for r in d['sweep']]"
}
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
run nvlink 29611
run socket 29621 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
