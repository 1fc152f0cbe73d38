#!/usr/bin/env bash
# The main job on the built-in lab: the paper's method end to end with a real engine. Boot the
# four-Spark switchless ring of inventory/ring4.yml on this machine (each lab Spark a machine with
# systemd and Docker, the cables veths shaped to the lab's rate), push it with Ansible, verify
# (the hardware checks included), serve vLLM's CPU build at TP4 in each Spark's Docker through the
# same launch scripts a Spark runs, estimate, bench at 200, flip to emulated 100, verify, bench
# again, report side by side with a verdict per test, tear down. Needs root (namespaces, machines).
# About 8 to 9 minutes on 2 cores once setup is done (8 min 25 s at 1dd7371, 5 rounds per test
# and mode, every cache empty); setup builds the lab's image beside the Python environments (84-106 s
# with apt's packages in place; benchmarks/results/main_job_2core.txt).
# With inventory/switch8-crs804-200.yml: the paper's 8 Sparks at TP8, about 17 minutes.
# Usage: scripts/demo.sh [INVENTORY] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
inv=${1:-inventory/ring4.yml}
cluster=$(sparkfab plan "$inv" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"])')
out=${2:-demo-$cluster}
rounds=${ROUNDS:-5}  # per test and mode: a verdict needs a spread (at least 3; 5 by default)
rm -rf "$out"
mkdir -p "$out"
t0=$(date +%s)
step() { printf '\n== [%4ss] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }

step "validate every example, plan $inv"
sparkfab validate -q inventory/*.yml  # one start of each engine's parser for all of them
sparkfab plan "$inv"

trap 'sparkfab lab down "$inv" || true' EXIT
step "lab up (booted Sparks with Docker, the lab's model, fabric veths shaped)"
sparkfab lab up "$inv"
step "apply";                    sparkfab apply "$inv" --lab
step "apply again (no change)";  sparkfab apply "$inv" --lab
step "verify at 200 (links, RDMA devices, firewall, cabling, reachability, collective)"
sparkfab verify "$inv" --lab --collective
step "serve start (docker launch scripts: workers first, rank 0 last, health wait)"
sparkfab serve start "$inv" --lab

# where rank 0 answers, under which model name, at which TP size
read -r head url model tp < <(sparkfab lab status "$inv" --format json | python3 -c '
import json, sys
s = json.load(sys.stdin)["serving"]
i = s[sorted(s)[0]]
print(i["head"], i["url"], i["model"], i["tp"])')

step "estimate: the lab's model at TP$tp and the lab's rates for 200 and 100e"
sparkfab estimate --inventory "$inv" --lab | tee "$out/estimate.txt"

bench() {  # on rank 0's Spark, so that its fabric netdevs' counters are sampled at 1 ms
  sparkfab lab exec "$inv" --net-only "$head" -- sparkfab bench --url "$url" --model "$model" --plan lab --rounds "$rounds" \
    --idle-seconds 0.1 --inventory "$inv" --lab --counters-host "$head" --source netdev --label "$1" -o "$out/run-$1"
}
step "bench at 200";           bench 200
step "battery's prefix check (the lab's model has random weights: it fails the checks; they run)"
sparkfab battery --url "$url" --model "$model" --checks prefix --context-chars 6000 || true
step "linkspeed 100e (ordered restart of the engine at the new rate)"
sparkfab linkspeed "$inv" 100e --lab
step "verify at 100e";         sparkfab verify "$inv" --lab
step "bench at 100e";          bench 100e
step "report";                 sparkfab report "$out/run-200" "$out/run-100e" --estimate -o "$out/report"
step "serve stop";             sparkfab serve stop "$inv" --lab
step "lab down";               trap - EXIT; sparkfab lab down "$inv"
step "verdict per test (TTFT 200 -> 100e against the run-to-run spread and the estimate's bound)"
python3 -c '
import json, sys
for row in json.load(open(sys.argv[1]))["ttft"]:
    print("verdict " + row["test"] + ": " + row.get("verdict", "-"))' "$out/report/tables.json"
step "done: open $out/report/report.html"
case "$out" in /*) echo "$out/report/report.html" ;; *) echo "$PWD/$out/report/report.html" ;; esac
