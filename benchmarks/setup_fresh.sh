#!/usr/bin/env bash
# scripts/setup.sh as a fresh machine of this kind runs it, measured on one that is not fresh
# (as root): a new clone, uv's and pip's caches empty, the lab image built anew, and the Debian
# packages installed anew into a throwaway root instead of this machine's own, which already has
# them. For the last, setup's PATH gets two stand-ins: `dpkg-query` finds nothing installed, and
# `apt-get install PKGS` runs mmdebstrap with the same packages into a new root, so that they are
# downloaded and unpacked as on a fresh machine (with Debian's base system besides: the figure is
# on the safe side); `apt-get update` is left to mmdebstrap, which fetches its own lists. Nothing
# of this machine's own apt, caches or lab images is touched.
#
# Prints the wall clock of the whole setup (setup's own lines say when each step ended) and of a
# second setup in the same clone (everything in place). Takes several minutes and a few GB in
# /var/tmp, removed at the end.
#   benchmarks/setup_fresh.sh [COMMIT]     (default: HEAD of this checkout)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
commit=${1:-HEAD}
[ "$(id -u)" = 0 ] || { echo "setup_fresh: run as root (setup installs Debian packages and builds the lab image)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/sparkfab-fresh.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/clone"
git -C "$work/clone" checkout -q "$commit"
mkdir -p "$work/shims" "$work/uv-cache" "$work/pip-cache" "$work/images"
real_apt=$(command -v apt-get) real_query=$(command -v dpkg-query)
# setup's own calls only (its exact words); every other caller (mmdebstrap building the lab image)
# gets the real programs
cat > "$work/shims/dpkg-query" <<EOF
#!/bin/sh
# setup asks: dpkg-query -W -f='\${Status}' PKG; a fresh machine has none of its packages
if [ "\$#" = 3 ] && [ "\$1" = -W ] && [ "\$2" = '-f=\${Status}' ]; then exit 1; fi
exec "$real_query" "\$@"
EOF
cat > "$work/shims/apt-get" <<EOF
#!/bin/sh
# setup's update is left to mmdebstrap (it fetches its own lists); setup's install puts the same
# packages into a new root
if [ "\$*" = "update -qq" ]; then exit 0; fi
case "\$*" in
  "install -y -qq --no-install-recommends "*)
    shift 4
    pkgs=\$(printf '%s,' "\$@")
    exec env PATH="$PATH" mmdebstrap --variant=minbase --quiet --include="\${pkgs%,}" bookworm "$work/apt-root" ;;
esac
exec "$real_apt" "\$@"
EOF
chmod +x "$work/shims/dpkg-query" "$work/shims/apt-get"

cd "$work/clone"
start=$(date +%s%N)
PATH="$work/shims:$PATH" UV_CACHE_DIR="$work/uv-cache" PIP_CACHE_DIR="$work/pip-cache" \
  SPARKFAB_LAB_IMAGES="$work/images" TMPDIR="$work" scripts/setup.sh
first=$(( ($(date +%s%N) - start) / 1000000 ))
start=$(date +%s%N)
UV_CACHE_DIR="$work/uv-cache" PIP_CACHE_DIR="$work/pip-cache" SPARKFAB_LAB_IMAGES="$work/images" scripts/setup.sh
second=$(( ($(date +%s%N) - start) / 1000000 ))
printf 'commit %s\nfresh setup  %d.%03d s\nsecond setup %d.%03d s\n' "$(git rev-parse --short HEAD)" \
  $((first / 1000)) $((first % 1000)) $((second / 1000)) $((second % 1000))
printf 'Debian packages (stand-in root) %s, lab image %s, .venv %s, .venv-vllm %s\n' \
  "$(du -sh "$work/apt-root" | cut -f1)" "$(du -sh "$work/images" | cut -f1)" \
  "$(du -sh .venv | cut -f1)" "$(du -sh .venv-vllm | cut -f1)"
