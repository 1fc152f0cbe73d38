#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole suite.
# Unit and golden tests run anywhere; lab tests (network namespaces) need root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
