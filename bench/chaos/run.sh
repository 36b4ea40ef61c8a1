#!/usr/bin/env bash
# bench/run chaos [--schedules N] [--seed S]: tests/cluster/chaos.py on three
# namespace hosts (brought up and down here; needs root), 20 seeded fault
# schedules by default: a host's processes killed, a link down and up, 30
# silent and 5 trickling connections to the driver, a rank killed, during a
# PBT sweep of 2-rank groups spread over the hosts. Prints one row per
# schedule and the JSON summary. Figures: bench/chaos/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
SCHEDULES=20 SEED=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --schedules) SCHEDULES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "bench/run chaos: unknown option '$1' (options: --schedules N, --seed S)" >&2; exit 2 ;;
  esac
done
[[ "$(id -u)" == 0 ]] || { echo "bench/run chaos: needs root (namespace hosts)" >&2; exit 1; }
bench_build tune_cli
CLUSTER="$ROOT/scripts/local-cluster.sh"
WORK="$(mktemp -d "$BUILD_DIR/chaos-XXXXXX")"  # on disk, not /tmp: the hosts see it
"$CLUSTER" up 3 2>/dev/null
trap '"$CLUSTER" down; rm -rf "$WORK"' EXIT
TUNE_BINARY="$BUILD_DIR/tune" TUNE_SOURCE_DIR="$ROOT" TUNE_CLUSTER_WORK="$WORK" \
  "$PYTHON" "$ROOT/tests/cluster/chaos.py" --schedules "$SCHEDULES" --seed "$SEED"
