#!/bin/sh
# sparkfab: start llama rank 1/2 on spark-b (start order 0; generated)
set -eu
if [ -r /etc/sparkfab/secrets.env ]; then for f in /etc/sparkfab/secrets.env; do while IFS= read -r line || [ -n "$line" ]; do case "$line" in ""|"#"*) continue ;; esac; export "$line"; done < "$f"; done; fi
docker rm -f sparkfab-llama >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-llama --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/llama.env -e HF_TOKEN \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface \
  lmsysorg/sglang:v0.5.23-cu130 \
  python3 -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct --served-model-name llama-3.3-70b --context-length 32768 --mem-fraction-static 0.8 --enable-metrics --tp-size 2 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.21:29501 --host 0.0.0.0 --port 8000
