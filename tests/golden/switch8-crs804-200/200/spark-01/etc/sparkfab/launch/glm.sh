#!/bin/sh
# sparkfab: start glm rank 0/8 on spark-01 (start order 0; generated)
set -eu
if [ -r /etc/sparkfab/secrets.env ]; then for f in /etc/sparkfab/secrets.env; do while IFS= read -r line || [ -n "$line" ]; do case "$line" in ""|"#"*) continue ;; esac; export "$line"; done < "$f"; done; fi
docker rm -f sparkfab-glm >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-glm --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/glm.env -e HF_TOKEN -e VLLM_API_KEY \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface \
  vllm-node-b12x \
  bash -c 'ray start --head --port 29501 --node-ip-address 10.0.1.11 --disable-usage-stats && exec vllm serve Inferact/GLM-5.3-NVFP4 --served-model-name glm-5.3 --max-num-batched-tokens 4096 --long-prefill-token-threshold 2048 --max-num-seqs 8 --max-model-len 262144 --kv-cache-dtype fp8 --gpu-memory-utilization 0.726 --enable-chunked-prefill --enable-prefix-caching --speculative-config '"'"'{"method": "mtp", "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1}'"'"' --tensor-parallel-size 8 --distributed-executor-backend ray --host 0.0.0.0 --port 8000'
