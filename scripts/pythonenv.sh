# What scripts/setup.sh and scripts/lock.sh share (sourced, not run): the versions that are pinned
# by hand, the locks' inputs and how uv is set up on this machine.
# shellcheck shell=bash

UV_VERSION=0.13.9
RAY_VERSION=2.60.0
TORCH_VERSION=2.13.0
VLLM_VERSION=$(sed -n 's/^# vllm \([0-9.]*\).*/\1/p' launchers/vllm-serve-flags.txt)
SGLANG_VERSION=$(sed -n 's/^# sglang \([0-9.]*\).*/\1/p' launchers/sglang-serve-flags.txt)
LOCKS=requirements
PY=${PYTHON:-python3}
export UV_NO_PROGRESS=1

uv_settings() {
  # uv does not read pip's configuration: the machine's own (a mirror, local wheels, pip's
  # constraints, as pip.conf and PIP_* give them) is handed to it, so that both install alike;
  # like pip, uv then takes the best match from every index, not the first index's
  local key value
  while IFS='=' read -r key value; do
    value=${value#\'}; value=${value%\'}
    case "$key" in
      *.index-url) export UV_INDEX_URL="$value" ;;
      *.extra-index-url) export UV_EXTRA_INDEX_URL="$value" ;;
      *.find-links) export UV_FIND_LINKS="${value// /,}" ;;  # uv: comma-separated
      *.constraint) export UV_CONSTRAINT="$value" ;;
    esac
  done < <(.venv/bin/python -m pip config list 2>/dev/null)
  export UV_INDEX_STRATEGY=unsafe-best-match
}

bootstrap_uv() {
  # uv itself, into .venv, from its own lock (the one step before the others: all install with it)
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  if ! .venv/bin/uv --version 2>/dev/null | grep -qx "uv $UV_VERSION"; then
    .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$LOCKS/uv.txt"
  fi
}
