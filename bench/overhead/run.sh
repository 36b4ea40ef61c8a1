#!/usr/bin/env bash
# bench/run overhead [--quick]: tune's orchestration overhead next to Optuna 3.1
# (SQLite storage). Figures and method: bench/README.md. --quick: small sizes,
# for checking the script (figures not comparable).
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "bench/run overhead: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done

TRIALS=1000 IDEAL_TRIALS=200 RESULT_REPORTS=5000 MEMORY_TRIALS=10000 REPEAT=3 IDEAL_REPEAT=5
if [[ $QUICK == 1 ]]; then
  TRIALS=100 IDEAL_TRIALS=8 RESULT_REPORTS=500 MEMORY_TRIALS=500 REPEAT=1 IDEAL_REPEAT=1
fi

bench_build bench_overhead
TUNE_BIN="$BUILD_DIR/bench/overhead_bench"       # links tune::tune (libtorch too)
CORE_BIN="$BUILD_DIR/bench/overhead_bench_core"  # links tune::core only
PEER="$ROOT/bench/peers/optuna_overhead.py"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-overhead-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
RUNS="$SCRATCH/runs.tsv"   # LABEL <tab> JSON, one line per run
: >"$RUNS"

# run LABEL COMMAND...: one benchmark process; its JSON line goes to $RUNS.
run() {
  local label="$1"; shift
  local out
  note "$label: $(basename "$1") ${*:2}"
  if ! out="$("$@" --tmp "$SCRATCH" 2>"$SCRATCH/stderr")"; then
    cat "$SCRATCH/stderr" >&2
    echo "bench: '$label' failed: $*" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$label" "$(tail -n 1 <<<"$out")" >>"$RUNS"
}

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
if awk -v l="${LOAD_START%% *}" 'BEGIN { exit !(l > 0.5) }'; then
  note "load average is $LOAD_START: other work on this machine skews the figures"
fi

SEED=1
for i in $(seq "$REPEAT"); do
  run trials "$TUNE_BIN" trials --trials "$TRIALS" --slots 2 --seed "$((SEED + i))"
  run mpi "$TUNE_BIN" mpi --trials "$TRIALS" --slots 2 --seed "$((SEED + i))"
  run results "$TUNE_BIN" results --trials 8 --slots 8 --reports "$RESULT_REPORTS" --seed "$((SEED + i))"
  # The same number of results from 64 and 512 trials reporting at once.
  run results_64 "$TUNE_BIN" results --trials 64 --slots 64 --reports "$((RESULT_REPORTS / 8))" --seed "$((SEED + i))"
  run results_512 "$TUNE_BIN" results --trials 512 --slots 512 --reports "$((RESULT_REPORTS / 64))" \
    --seed "$((SEED + i))"
done
# The overhead over the ideal: the median of IDEAL_REPEAT runs (and their range), each
# beside a run with every report() waiting and one whose steps are plain sleeps (their late
# wakes added up, as before 2026-11-30), so a box that drifts hits all three alike.
for i in $(seq "$IDEAL_REPEAT"); do
  run ideal "$TUNE_BIN" ideal --trials "$IDEAL_TRIALS" --slots 2 --reports 10 --sleep-ms 10 --seed "$((SEED + i))"
  run ideal_waiting "$TUNE_BIN" ideal --trials "$IDEAL_TRIALS" --slots 2 --reports 10 --sleep-ms 10 --wait \
    --seed "$((SEED + i))"
  run ideal_plain "$TUNE_BIN" ideal --trials "$IDEAL_TRIALS" --slots 2 --reports 10 --sleep-ms 10 --plain-sleeps \
    --seed "$((SEED + i))"
done
run mpi_startup "$TUNE_BIN" mpi --trials 2 --slots 2 --seed "$SEED"
run mpi_core "$CORE_BIN" mpi --trials "$TRIALS" --slots 2 --seed "$SEED"
run memory "$TUNE_BIN" memory --trials "$MEMORY_TRIALS" --slots 2 --seed "$SEED"
run memory_core "$CORE_BIN" memory --trials "$MEMORY_TRIALS" --slots 2 --seed "$SEED"
run store "$CORE_BIN" store --reports 20000 --seed "$SEED"
# Where a trial's cost goes: the driver's profile (seconds per part), and the instructions per
# part under callgrind (bench/overhead/parts.sh; valgrind is part of every Debian dev setup).
PARTS_TRIALS=1000 PARTS_CG_TRIALS=300
[[ $QUICK == 1 ]] && PARTS_TRIALS=100 PARTS_CG_TRIALS=30
for i in $(seq "$REPEAT"); do
  run parts "$TUNE_BIN" parts --trials "$PARTS_TRIALS" --reports 5 --slots 2 --seed "$((SEED + i))"
done
if command -v valgrind >/dev/null; then
  note "parts under callgrind: $(basename "$CORE_BIN") parts --trials $PARTS_CG_TRIALS --reports 5"
  printf 'parts_ir\t%s\n' "$("$ROOT/bench/overhead/parts.sh" "$CORE_BIN" "$SCRATCH" "$PARTS_CG_TRIALS" 5 | tail -n 1)" >>"$RUNS"
else
  note "valgrind is not installed: no instruction counts per part (apt-get install valgrind)"
fi

if "$PYTHON" -c "import optuna" 2>/dev/null; then
  run optuna "$PYTHON" "$PEER" --trials "$TRIALS" --seed "$SEED"
else
  note "optuna is not importable by $PYTHON: the peer is skipped (apt-get install python3-optuna)"
fi

"$PYTHON" "$ROOT/bench/overhead/report.py" "$RUNS" --quick "$QUICK" \
  --load "$LOAD_START" --load-end "$(cut -d' ' -f1-3 /proc/loadavg)"
