#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole suite.
# Unit and golden tests run anywhere; lab tests (network namespaces) need root.
# A plain `pytest` runs only the unit and golden tier (tests/unit, under 2 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
# -m "": every tier (unit, golden, timing, quality, slow, lab); later -m arguments narrow it
exec .venv/bin/python -m pytest -m "" "$@"
