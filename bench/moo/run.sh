#!/usr/bin/env bash
# bench/run moo [--quick]: multi-objective search. tune's nsga2 and random next
# to Optuna 3.1's NSGAIISampler and RandomSampler on ZDT1, ZDT2, ZDT3 (10
# variables) and DTLZ2 (3 objectives, 7 variables): 500 sequential trials,
# population 50, 20 seeds (--quick: 3). Median and quartiles of the
# hypervolume (tune's exact one for every sampler; reference (1.1, 10) on ZDT,
# (1.1, 1.1, 1.1) on DTLZ2) and the mean time per suggestion. The searchers are driven
# directly (suggest / on_complete; Optuna's ask / tell), not through the sweep
# driver. Runs TUNE_BENCH_PARALLEL (default 2) jobs at a time.
# Figures and method: bench/moo/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

SEEDS=20 BUDGET=500 POPULATION=50
for arg in "$@"; do
  case "$arg" in
    --quick) SEEDS=3 ;;
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

JOBS_LIST=()
for problem in zdt1 zdt2 zdt3 dtlz2; do
  common=(--problem "$problem" --budget "$BUDGET" --population "$POPULATION" --seeds "$SEEDS")
  for algorithm in nsga2 random; do
    JOBS_LIST+=("$(printf '%q ' "$BIN" run --algorithm "$algorithm" "${common[@]}")")
    JOBS_LIST+=("$(printf '%q ' "$PYTHON" "$PEER" --sampler "$algorithm" "${common[@]}") | $(printf '%q' "$BIN") score")
  done
done

START=$SECONDS
run_jobs
note "runs: $((SECONDS - START)) s ($PARALLEL at a time)"
for i in "${!JOBS_LIST[@]}"; do cat "$SCRATCH/out.$i"; done | "$PYTHON" "$ROOT/bench/moo/report.py"
