#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole suite.
# Unit and golden tests run anywhere; lab tests (network namespaces, booted machines) need root.
# A plain `pytest` runs only the unit and golden tier (tests/unit, under 2 minutes).
#
# Without arguments: every tier but `timing` on two pytest-xdist workers (tests of one lab run on
# one worker, different labs side by side: tests/helpers/lab.py `builds`), then the `timing` tier
# alone, since a loaded machine misses its wall-clock bounds without a bug.
# With arguments: one serial run of every tier (`-m ""`); later -m arguments narrow it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest -m "" "$@"
fi
.venv/bin/python -m pytest -m "not timing" -n 2 --dist loadgroup --durations=40
exec .venv/bin/python -m pytest -m timing
