#!/usr/bin/env bash
# bench/run bayes [--quick]: tune's model-based searchers (bayes, tpe) next to
# Optuna 3.1 (TPE, CMA-ES, random) on standard test functions, 20 seeds each:
# median and quartiles of the simple regret (best found - known minimum);
# bayes with 4 concurrent (pending) trials vs sequential at the same budget;
# suggestion latency of bayes at 50/200/500 observations in 6-D.
# The searchers are driven directly (suggest / on_complete), not through the
# sweep driver. Figures and method: bench/bayes/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

SEEDS=20 REPEATS=3
for arg in "$@"; do
  case "$arg" in
    --quick) SEEDS=3 REPEATS=1 ;;
    *) echo "bench/run bayes: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done

bench_build bench_bayes
BIN="$BUILD_DIR/bench/bayes_bench"
PEER="$ROOT/bench/peers/optuna_bayes.py"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-bayes-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
RUNS="$SCRATCH/runs.jsonl"
: >"$RUNS"

run() {
  note "$*"
  if ! "$@" >>"$RUNS" 2>"$SCRATCH/stderr"; then
    cat "$SCRATCH/stderr" >&2
    echo "bench: failed: $*" >&2
    exit 1
  fi
}

if ! "$PYTHON" -c "import optuna, cmaes" 2>/dev/null; then
  echo "bench: $PYTHON cannot import optuna and cmaes (install python3-optuna: TUNE_WITH_PEERS=1 scripts/install-deps.sh)" >&2
  exit 1
fi

for spec in branin:50 hartmann6:100 camel:50 hartmann3:50 levy4:100; do
  fn="${spec%%:*}" budget="${spec##*:}"
  run "$BIN" regret --algorithm bayes --function "$fn" --budget "$budget" --seeds "$SEEDS"
  run "$BIN" regret --algorithm bayes --function "$fn" --budget "$budget" --seeds "$SEEDS" --concurrency 4
  run "$BIN" regret --algorithm tpe --function "$fn" --budget "$budget" --seeds "$SEEDS"
  run "$BIN" regret --algorithm tpe --function "$fn" --budget "$budget" --seeds "$SEEDS" \
    --params '{"multivariate": true}'
  run "$BIN" regret --algorithm random --function "$fn" --budget "$budget" --seeds "$SEEDS"
  for sampler in tpe tpe-multivariate cmaes random; do
    run "$PYTHON" "$PEER" --sampler "$sampler" --function "$fn" --budget "$budget" --seeds "$SEEDS"
  done
done
run "$BIN" latency --observations 50,200,500 --repeats "$REPEATS"

"$PYTHON" "$ROOT/bench/bayes/report.py" "$RUNS"
