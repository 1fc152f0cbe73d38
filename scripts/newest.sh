#!/usr/bin/env bash
# Newer versions tried on purpose, on a day we choose: lock every environment again at the newest
# versions that pyproject.toml's ranges and scripts/pythonenv.sh's pins allow, then run the README's
# test command on them (setup syncs each environment to its new lock; arguments go to the test
# command). Green: commit requirements/ as one commit. Red: what failed is the drift to answer;
# `git checkout requirements/ && scripts/setup.sh` goes back to the lock that was tested.
# (The `newest` test tier, `pytest -m newest`, tries the same without touching the lock.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/lock.sh --upgrade
git --no-pager diff --stat -- requirements/ || true
exec scripts/test.sh "$@"
