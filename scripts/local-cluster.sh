#!/usr/bin/env bash
# scripts/local-cluster.sh up N | down | exec HOST CMD... | env
#
# N test hosts on this machine, each a set of Linux namespaces: its own
# network (a veth on the bridge tunebr0: the driver's side is 10.77.0.1, host
# i is 10.77.0.(10+i)), its own hostname (tunehost<i>) and its own /tmp (a
# tmpfs), so nothing written on one host is seen on another or by the driver
# except through tune. Traffic stays on loopback and on this bridge. OpenMPI
# reaches the hosts through scripts/local-cluster-agent.sh (its rsh agent):
#   eval "$(scripts/local-cluster.sh env)"   # OMPI_MCA_plm_rsh_agent=...
#   printf '10.77.0.11 slots=2\n10.77.0.12 slots=2\n' > hosts
#   tune run sweep.yaml --hostfile hosts
# `down` kills every process in the hosts and removes them. Needs root.
set -euo pipefail
STATE=/run/tune-cluster
BRIDGE=tunebr0
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

host_ip() { echo "10.77.0.$((10 + $1))"; }

up() {
  local n=$1
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 50 ]] || { echo "local-cluster: up N, 1 <= N <= 50" >&2; exit 2; }
  [[ -e $STATE/hosts ]] && down
  mkdir -p "$STATE"
  # Persistent mount namespaces need a private mount to live on.
  mountpoint -q "$STATE" || mount -t tmpfs -o size=1m tmpfs "$STATE"
  mount --make-private "$STATE"
  ip link add "$BRIDGE" type bridge
  ip addr add 10.77.0.1/24 dev "$BRIDGE"
  ip link set "$BRIDGE" up
  : >"$STATE/hosts"
  for i in $(seq 1 "$n"); do
    local name="tunehost$i" ip
    ip="$(host_ip "$i")"
    ip netns add "$name"
    ip link add "tvh$i" type veth peer name eth0 netns "$name"
    ip link set "tvh$i" master "$BRIDGE" up
    ip -n "$name" addr add "$ip/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" link set lo up
    mkdir -p "$STATE/$name"
    touch "$STATE/$name/mnt" "$STATE/$name/uts"
    unshare --mount="$STATE/$name/mnt" --uts="$STATE/$name/uts" --propagation private \
      sh -c "hostname $name && mount -t tmpfs -o size=2g tmpfs /tmp"
    echo "$name $ip" >>"$STATE/hosts"
  done
  echo "local-cluster: $n hosts up:" >&2
  cat "$STATE/hosts" >&2
}

# The namespaces of a host given by name or address.
host_of() {
  [[ -e $STATE/hosts ]] || { echo "local-cluster: no cluster is up" >&2; exit 1; }
  awk -v h="$1" '$1 == h || $2 == h { print $1; exit }' "$STATE/hosts"
}

run_in() {
  local name
  name="$(host_of "$1")"
  [[ -n $name ]] || { echo "local-cluster: unknown host '$1'" >&2; exit 1; }
  shift
  exec nsenter --net="/run/netns/$name" --mount="$STATE/$name/mnt" --uts="$STATE/$name/uts" -- "$@"
}

down() {
  if [[ -e $STATE/hosts ]]; then
    while read -r name ip; do
      # Every process of the host, then its namespaces.
      for pid in $(ip netns pids "$name" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      umount "$STATE/$name/mnt" "$STATE/$name/uts" 2>/dev/null || true
      ip netns delete "$name" 2>/dev/null || true
    done <"$STATE/hosts"
    rm -f "$STATE/hosts"
  fi
  ip link delete "$BRIDGE" 2>/dev/null || true
  for link in $(ip -o link show | awk -F': ' '$2 ~ /^tvh[0-9]+@/ { sub(/@.*/, "", $2); print $2 }'); do
    ip link delete "$link" 2>/dev/null || true
  done
  if mountpoint -q "$STATE"; then umount -l "$STATE" || true; fi
  rm -rf "$STATE"
}

case "${1:-}" in
  up) up "${2:-2}" ;;
  down) down ;;
  exec) shift; run_in "$@" ;;
  env) echo "export OMPI_MCA_plm_rsh_agent=$HERE/local-cluster-agent.sh" ;;
  hosts) cat "$STATE/hosts" ;;
  *) echo "usage: scripts/local-cluster.sh up N | down | exec HOST CMD... | env | hosts" >&2; exit 2 ;;
esac
