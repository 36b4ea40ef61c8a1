#!/usr/bin/env bash
# bench/run moo [--quick]: multi-objective search. tune's nsga2 and random next
# to Optuna 3.1's NSGAIISampler and RandomSampler on ZDT1, ZDT2, ZDT3 (10
# variables) and DTLZ2 (3 objectives, 7 variables): 500 sequential trials,
# population 50, 20 seeds (--quick: 3). Then ZDT1-3 at 200 trials and 5
# seeds (--quick: 2) with tune's tpe and Optuna's TPESampler added: Optuna's
# multi-objective TPE takes ~15 s a seed there (its split and hypervolume
# weights are redone for every parameter), and several times that on DTLZ2's
# three objectives, too slow for the full budget. Median and quartiles of the
# hypervolume (tune's exact one for every sampler; reference (1.1, 10) on ZDT,
# (1.1, 1.1, 1.1) on DTLZ2) and the mean time per suggestion. The searchers are driven
# directly (suggest / on_complete; Optuna's ask / tell), not through the sweep
# driver. Runs TUNE_BENCH_PARALLEL (default 2) jobs at a time.
# Figures and method: bench/moo/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

SEEDS=20 BUDGET=500 POPULATION=50
TPE_SEEDS=5 TPE_BUDGET=200
for arg in "$@"; do
  case "$arg" in
    --quick) SEEDS=3 TPE_SEEDS=2 ;;
    *) echo "bench/run moo: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done
PARALLEL="${TUNE_BENCH_PARALLEL:-2}"

bench_build bench_moo
BIN="$BUILD_DIR/bench/moo_bench"
PEER="$ROOT/bench/peers/optuna_nsga2.py"

if ! "$PYTHON" -c "import optuna" 2>/dev/null; then
  echo "bench: $PYTHON cannot import optuna (install python3-optuna: TUNE_WITH_PEERS=1 scripts/install-deps.sh)" >&2
  exit 1
fi
"$PYTHON" "$PEER" --check --evaluator "$BIN"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-moo-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

# add_jobs "PROBLEM..." BUDGET SEEDS ALGORITHM...: tune's and Optuna's runs
# of each algorithm on each problem. Optuna's TPE runs first: it is the longest.
JOBS_LIST=()
add_jobs() {
  local problems="$1" budget="$2" seeds="$3" problem algorithm
  shift 3
  for algorithm in "$@"; do
    for problem in $problems; do
      local common=(--problem "$problem" --budget "$budget" --population "$POPULATION" --seeds "$seeds")
      JOBS_LIST+=("$(printf '%q ' "$PYTHON" "$PEER" --sampler "$algorithm" "${common[@]}") | $(printf '%q' "$BIN") score")
      JOBS_LIST+=("$(printf '%q ' "$BIN" run --algorithm "$algorithm" "${common[@]}")")
    done
  done
}
add_jobs "zdt1 zdt2 zdt3" "$TPE_BUDGET" "$TPE_SEEDS" tpe nsga2 random
add_jobs "zdt1 zdt2 zdt3 dtlz2" "$BUDGET" "$SEEDS" nsga2 random

START=$SECONDS
run_jobs
note "runs: $((SECONDS - START)) s ($PARALLEL at a time)"
for i in "${!JOBS_LIST[@]}"; do cat "$SCRATCH/out.$i"; done | "$PYTHON" "$ROOT/bench/moo/report.py"
