#!/bin/sh
# sparkfab: start mesh rank 1/3 on spark-2 (start order 0; generated)
set -eu
if [ -r /etc/sparkfab/secrets.env ]; then for f in /etc/sparkfab/secrets.env; do while IFS= read -r line || [ -n "$line" ]; do case "$line" in ""|"#"*) continue ;; esac; export "$line"; done < "$f"; done; fi
docker rm -f sparkfab-mesh >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-mesh --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/mesh.env -e HF_TOKEN -e VLLM_API_KEY \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface -v /srv/models:/models:ro \
  vllm/vllm-openai:v0.32.0 \
  /models/GLM-5.3-Flash-NVFP4 --served-model-name glm-5.3-flash --max-model-len 524288 --kv-cache-dtype fp8 --enable-prefix-caching --trust-remote-code --tensor-parallel-size 3 --distributed-executor-backend mp --nnodes 3 --node-rank 1 --master-addr 10.0.0.31 --master-port 29501 --headless --host 0.0.0.0 --port 8000
