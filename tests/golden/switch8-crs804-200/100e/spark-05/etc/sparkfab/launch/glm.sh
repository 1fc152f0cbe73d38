#!/bin/sh
# sparkfab: start glm rank 4/8 on spark-05 (start order 3; generated)
set -eu
docker rm -f sparkfab-glm >/dev/null 2>&1 || true
exec docker run -d --name sparkfab-glm --restart no \
  --network host --ipc host --gpus all \
  --device /dev/infiniband --cap-add IPC_LOCK \
  --ulimit memlock=-1 --ulimit stack=67108864 --shm-size 64g \
  --env-file /etc/sparkfab/nccl.env --env-file /etc/sparkfab/launch/glm.env \
  -v /etc/sparkfab:/etc/sparkfab:ro \
  -v /root/.cache/huggingface:/root/.cache/huggingface \
  vllm-node-b12x \
  ray start --block --address 10.0.1.11:29501 --node-ip-address 10.0.1.15 --disable-usage-stats
