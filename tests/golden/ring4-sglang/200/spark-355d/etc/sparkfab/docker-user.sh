#!/bin/sh
# sparkfab: let forwarded fabric traffic of ring4-sglang/spark-355d pass Docker's FORWARD policy (generated)
# Docker jumps from FORWARD to DOCKER-USER before its own rules and keeps what is there.
# With --check it adds nothing and counts the rules missing (sparkfab's check before a push).
set -eu
check=0
if [ "${1:-}" = --check ]; then check=1; fi
command -v iptables >/dev/null 2>&1 || { echo "sparkfab-docker-user: no iptables, added=0"; exit 0; }
[ "$check" = 1 ] || iptables -w -N DOCKER-USER 2>/dev/null || true
added=0
for pair in "enp1s0f0np0 enp1s0f1np1" "enp1s0f0np0 enP2p1s0f0np0" "enp1s0f0np0 enP2p1s0f1np1" "enp1s0f1np1 enp1s0f0np0" "enp1s0f1np1 enP2p1s0f0np0" "enp1s0f1np1 enP2p1s0f1np1" "enP2p1s0f0np0 enp1s0f0np0" "enP2p1s0f0np0 enp1s0f1np1" "enP2p1s0f0np0 enP2p1s0f1np1" "enP2p1s0f1np1 enp1s0f0np0" "enP2p1s0f1np1 enp1s0f1np1" "enP2p1s0f1np1 enP2p1s0f0np0"; do
	set -- $pair
	if ! iptables -w -C DOCKER-USER -i "$1" -o "$2" -m comment --comment sparkfab -j ACCEPT 2>/dev/null; then
		[ "$check" = 1 ] || iptables -w -I DOCKER-USER -i "$1" -o "$2" -m comment --comment sparkfab -j ACCEPT
		added=$((added + 1))
	fi
done
if [ "$check" = 1 ]; then echo "sparkfab-docker-user: missing=$added"; else echo "sparkfab-docker-user: added=$added"; fi
