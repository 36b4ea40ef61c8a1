#!/usr/bin/env bash
# bench/run scale [--quick] [--trials N] [--hosts H] [--seconds S]: one driver
# facing a cluster's worth of trials. 10,000 simulated trials (timers, no
# processes) over 1,000 simulated hosts each report once a second after
# their previous answer; the real driver places them, decides (ASHA, PBT),
# commits and answers. Prints a table (results/s, p50/p99 report latency,
# driver cores and µs of driver CPU per result, driver memory per live
# trial, store bytes per million results) and, last, one JSON line.
# --quick: 1,000 trials over 100 hosts for 10 s. Figures: bench/scale/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

TRIALS=10000 HOSTS=1000 SECONDS_EACH=30
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) TRIALS=1000 HOSTS=100 SECONDS_EACH=10 ;;
    --trials) TRIALS="${2:?--trials needs a number}"; shift ;;
    --hosts) HOSTS="${2:?--hosts needs a number}"; shift ;;
    --seconds) SECONDS_EACH="${2:?--seconds needs a number}"; shift ;;
    *) echo "bench/run scale: unknown option '$1' (options: --quick, --trials N, --hosts H, --seconds S)" >&2; exit 2 ;;
  esac
  shift
done

bench_build bench_scale
BIN="$BUILD_DIR/bench/scale_bench"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-scale-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
note "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for scheduler in asha pbt; do
  note "$scheduler: $TRIALS trials over $HOSTS hosts at 1 Hz for $SECONDS_EACH s"
  "$BIN" --trials "$TRIALS" --hosts "$HOSTS" --period 1 --seconds "$SECONDS_EACH" --scheduler "$scheduler" \
    --tmp "$SCRATCH" | tail -n 1 >>"$SCRATCH/runs.jsonl"
done

"$PYTHON" - "$SCRATCH/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("One driver, simulated cluster (report at 1 Hz after each answer; real driver, store and scheduler)")
head = f"{'scheduler':<10}{'trials':>8}{'hosts':>7}{'results/s':>11}{'offered/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'driver cores':>14}{'us/result':>11}{'KB/live trial':>15}{'MB/M results':>14}"
print(head)
for r in runs:
    print(f"{r['scheduler']:<10}{r['trials']:>8}{r['hosts']:>7}{r['results_per_s']:>11.0f}{r['offered_per_s']:>11.0f}"
          f"{r['report_p50_ms']:>9.2f}{r['report_p99_ms']:>9.2f}{r['driver_cores']:>14.3f}"
          f"{r['driver_cores'] / max(r['results_per_s'], 1) * 1e6:>11.1f}"
          f"{r['driver_kb_per_live_trial']:>15.2f}{r['store_bytes_per_million_results'] / 1e6:>14.0f}")
print(json.dumps({"bench": "scale", "runs": runs}))
PY
