#!/usr/bin/env bash
# Benchmark: does the quiet time bench waits for before a round (--idle-seconds 0.5 against the
# main job's 0.1) move TTFT? One ring4 lab serving vLLM's CPU build, four benches of L1 and L2 at
# 200, 5 rounds each, in the order 0.5, 0.1, 0.5, 0.1 (about 8 minutes on 2 cores). Run as root
# after scripts/setup.sh; results: benchmarks/results/main_job_2core.txt (run D).
# Usage: benchmarks/idle_wait_ab.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
inv=inventory/ring4.yml
out=${1:-idle-ab}
rm -rf "$out"; mkdir -p "$out"
trap 'sparkfab lab down "$inv" -q || true' EXIT
sparkfab lab up "$inv" -q
sparkfab apply "$inv" --lab -q
sparkfab serve start "$inv" --lab -q
read -r head url model tp < <(sparkfab lab status "$inv" --format json | python3 -c '
import json, sys
s = json.load(sys.stdin)
i = next(iter(s["serving"].values()))
print(i["head"], i["url"], i["model"], i["tp"])')
for k in 1 2; do
  for idle in 0.5 0.1; do
    echo "== $(date +%T) bench idle $idle ($k)"
    sparkfab lab exec "$inv" --net-only "$head" -- sparkfab bench --url "$url" --model "$model" --plan L1,L2 --rounds 5 \
      --idle-seconds "$idle" --inventory "$inv" --lab --counters-host "$head" --source netdev --label "idle$idle-$k" -o "$out/idle$idle-$k" -q
  done
done
sparkfab serve stop "$inv" --lab -q
python3 - "$out" <<'PY'
import json, statistics, sys
from pathlib import Path
for d in sorted(Path(sys.argv[1]).glob("idle*")):
    rows = [json.loads(x) for x in (d / "requests.jsonl").read_text().splitlines() if x.strip()]
    cells = []
    for test in ("L1", "L2"):
        ttft = sorted(r["ttft_s"] for r in rows if r.get("test") == test and not r.get("warmup") and r.get("ttft_s"))
        cells.append(f"{test} TTFT median {statistics.median(ttft):.3f} s")
    print(d.name, " | ".join(cells))
PY
