#!/usr/bin/env bash
# The main job on the built-in lab: validate and plan every example inventory.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
for inv in inventory/*.yml; do
  sparkfab validate "$inv"
done
sparkfab plan inventory/ring4.yml
