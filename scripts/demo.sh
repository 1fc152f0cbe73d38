#!/usr/bin/env bash
# The main job on the built-in lab: bring up the four-Spark switchless ring of
# inventory/ring4.yml on this machine, push it with Ansible, start serving (the lab's
# collective workload), verify, flip to emulated 100 Gb/s, verify again, tear down.
# Needs root (network namespaces). Usage: scripts/demo.sh [INVENTORY]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
inv=${1:-inventory/ring4.yml}

for f in inventory/*.yml; do sparkfab validate -q "$f"; done
sparkfab plan "$inv"

trap 'sparkfab lab down "$inv" || true' EXIT
step() { printf '\n== %s\n' "$*" >&2; }
step "lab up";                 sparkfab lab up "$inv"
step "apply";                  sparkfab apply "$inv" --lab
step "apply again (no change)"; sparkfab apply "$inv" --lab
step "serve start";            sparkfab serve start "$inv" --lab
step "verify at 200";          sparkfab verify "$inv" --lab --collective
step "linkspeed 100e";         sparkfab linkspeed "$inv" 100e --lab
step "verify at 100e";         sparkfab verify "$inv" --lab
step "lab down";               trap - EXIT; sparkfab lab down "$inv"
