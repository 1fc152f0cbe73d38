#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole suite.
# Unit and golden tests run anywhere; lab tests (network namespaces, booted machines) need root.
# A plain `pytest` runs only the unit and golden tier (tests/unit, about 65 s on 2 cores, -n auto).
#
# Without arguments, four runs: every tier but `lab`, `timing` and `newest` (scripts/newest.sh,
# not a gate) on two pytest-xdist workers;
# then the lab tier on two workers, the tests of one lab name on one worker (tests/lab/conftest.py:
# a lab test waits on ssh, boots and timers more than it computes, about 40 % of two cores alone);
# then the lab tests marked `alone`, one at a time (a real engine on every rank keeps both cores
# busy); then the `timing` tier alone, since a loaded machine misses its wall-clock bounds without a bug.
# With arguments: one serial run of every tier but `newest` (`-n 0`); later -m or -n arguments change it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest -m "not newest" -n 0 "$@"
fi
rc=0
.venv/bin/python -m pytest -m "not lab and not timing and not newest" -n 2 || rc=1
.venv/bin/python -m pytest -m "lab and not alone" -n 2 --dist loadgroup --durations=50 || rc=1
.venv/bin/python -m pytest -m "lab and alone" -n 0 --durations=10 || rc=1
# the timing tier on a settled machine: what the lab ended (its machines, Docker) winds down
# for a while after the last lab test, and the 1-minute load average says when it has
for _ in $(seq 30); do
    awk -v cpus="$(nproc)" '{ exit !($1 < cpus) }' /proc/loadavg && break
    sleep 2
done
.venv/bin/python -m pytest -m timing -n 0 || rc=1
exit "$rc"
