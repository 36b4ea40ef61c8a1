#!/usr/bin/env bash
# bench/run bayes [--quick]: tune's searchers (bayes, tpe, random) next to
# Optuna 3.1 (TPE, CMA-ES, random) on the suite of bayes_bench (`bayes_bench
# list`): issue 5's five test functions (20 seeds, with the extra rows: bayes
# with 4 concurrent (pending) trials, multivariate TPE, Optuna random) and
# issue 13's additions (multimodal, ill-conditioned, noisy, mixed
# integer/categorical, two real tuning tasks) and issue 33's narrow basins on a
# flat plateau (20 seeds each: their outcomes are bimodal): median and quartiles
# of the simple regret, the per-problem ratio Optuna TPE / tune bayes and its
# geometric mean; suggestion latency of bayes at 50/200/500/1,000 observations in 6-D.
# The searchers are driven directly (suggest / on_complete), not through the
# sweep driver. Runs TUNE_BENCH_PARALLEL (default 2) regret jobs at a time; the
# latency runs alone at the end. TUNE_BENCH_BAYES_RUNS=FILE keeps the raw runs.
# Figures and method: bench/bayes/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

SEEDS=20 SUITE_SEEDS=20 REPEATS=3
for arg in "$@"; do
  case "$arg" in
    --quick) SEEDS=3 SUITE_SEEDS=3 REPEATS=1 ;;
    *) echo "bench/run bayes: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done
PARALLEL="${TUNE_BENCH_PARALLEL:-2}"

bench_build bench_bayes
BIN="$BUILD_DIR/bench/bayes_bench"
PEER="$ROOT/bench/peers/optuna_bayes.py"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-bayes-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
RUNS="$SCRATCH/runs.jsonl"
: >"$RUNS"

if ! "$PYTHON" -c "import optuna, cmaes" 2>/dev/null; then
  echo "bench: $PYTHON cannot import optuna and cmaes (install python3-optuna: TUNE_WITH_PEERS=1 scripts/install-deps.sh)" >&2
  exit 1
fi
"$PYTHON" "$PEER" --check --evaluator "$BIN" >&2

# The jobs, one shell-quoted command line each, in table order.
JOBS_LIST=()
job() {
  local line
  line="$(printf '%q ' "$@")"
  JOBS_LIST+=("$line")
}
ORIGINAL=" branin hartmann6 camel hartmann3 levy4 "
while read -r fn budget; do
  if [[ "$ORIGINAL" == *" $fn "* ]]; then
    job "$BIN" regret --algorithm bayes --function "$fn" --budget "$budget" --seeds "$SEEDS"
    job "$BIN" regret --algorithm bayes --function "$fn" --budget "$budget" --seeds "$SEEDS" --concurrency 4
    job "$BIN" regret --algorithm tpe --function "$fn" --budget "$budget" --seeds "$SEEDS"
    job "$BIN" regret --algorithm tpe --function "$fn" --budget "$budget" --seeds "$SEEDS" --params '{"multivariate":true}'
    job "$BIN" regret --algorithm random --function "$fn" --budget "$budget" --seeds "$SEEDS"
    for sampler in tpe tpe-multivariate cmaes random; do
      job "$PYTHON" "$PEER" --sampler "$sampler" --function "$fn" --budget "$budget" --seeds "$SEEDS"
    done
  else
    for algorithm in bayes tpe random; do
      job "$BIN" regret --algorithm "$algorithm" --function "$fn" --budget "$budget" --seeds "$SUITE_SEEDS"
    done
    for sampler in tpe cmaes; do
      job "$PYTHON" "$PEER" --sampler "$sampler" --function "$fn" --budget "$budget" --seeds "$SUITE_SEEDS" --evaluator "$BIN"
    done
  fi
done < <("$BIN" list | "$PYTHON" -c 'import json, sys
for line in sys.stdin: d = json.loads(line); print(d["function"], d["budget"])')

START=$SECONDS
run_jobs
for i in "${!JOBS_LIST[@]}"; do cat "$SCRATCH/out.$i" >>"$RUNS"; done
note "regret runs: $((SECONDS - START)) s ($PARALLEL at a time)"

note "$BIN latency --observations 50,200,500,1000 --repeats $REPEATS"
"$BIN" latency --observations 50,200,500,1000 --repeats "$REPEATS" >>"$RUNS"

# TUNE_BENCH_BAYES_RUNS=FILE keeps the raw runs (one JSON line each) for report.py.
if [[ -n "${TUNE_BENCH_BAYES_RUNS:-}" ]]; then cp "$RUNS" "$TUNE_BENCH_BAYES_RUNS"; fi
"$PYTHON" "$ROOT/bench/bayes/report.py" "$RUNS"
