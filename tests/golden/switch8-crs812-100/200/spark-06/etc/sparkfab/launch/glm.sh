#!/bin/sh
# sparkfab: start glm rank 5/8 on spark-06 (start order 1; generated)
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
  bash -c 'for _ in $(seq 1860); do (exec 3<>/dev/tcp/10.0.1.11/29501) 2>/dev/null && exec ray start --block --address 10.0.1.11:29501 --node-ip-address 10.0.1.16 --disable-usage-stats; sleep 2; done; echo '"'"'no Ray head answered at 10.0.1.11:29501 within 3720 s'"'"' >&2; exit 1'
