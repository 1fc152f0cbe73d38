#!/bin/sh
# sparkfab: start glm rank 0/4 on spark-329f (start order 1; generated)
set -eu
if [ -r /etc/sparkfab/secrets.env ]; then for f in /etc/sparkfab/secrets.env; do while IFS= read -r line || [ -n "$line" ]; do case "$line" in ""|"#"*) continue ;; esac; export "$line"; done < "$f"; done; fi
docker rm -f sparkfab-glm >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-glm --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/glm.env -e HF_TOKEN -e VLLM_API_KEY \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface -v /srv/models:/models:ro \
  vllm/vllm-openai:v0.32.0 \
  /models/GLM-5.3-Flash-NVFP4 --served-model-name glm-5.3-flash --max-model-len 1048576 --kv-cache-dtype fp8 --kv-cache-memory-bytes 27917287424 --max-num-batched-tokens 16384 --max-num-seqs 32 --enable-prefix-caching --trust-remote-code --tensor-parallel-size 4 --distributed-executor-backend mp --nnodes 4 --node-rank 0 --master-addr 192.168.100.1 --master-port 29501 --host 0.0.0.0 --port 8000
