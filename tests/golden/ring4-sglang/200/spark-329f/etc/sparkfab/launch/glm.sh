#!/bin/sh
# sparkfab: start glm rank 0/4 on spark-329f (start order 1; generated)
set -eu
if [ -r /etc/sparkfab/secrets.env ]; then for f in /etc/sparkfab/secrets.env; do while IFS= read -r line || [ -n "$line" ]; do case "$line" in ""|"#"*) continue ;; esac; export "$line"; done < "$f"; done; fi
docker rm -f sparkfab-glm >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-glm --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/glm.env -e HF_TOKEN \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface -v /srv/models:/models:ro \
  lmsysorg/sglang:v0.5.23-cu130 \
  python3 -m sglang.launch_server --model-path /models/GLM-5.3-Flash-NVFP4 --served-model-name glm-5.3-flash --context-length 1048576 --kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.85 --trust-remote-code --enable-metrics --tp-size 4 --nnodes 4 --node-rank 0 --dist-init-addr 192.168.100.1:29501 --host 0.0.0.0 --port 8000
