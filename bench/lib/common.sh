# shellcheck shell=bash disable=SC2034  # (variables are used by the sourcing scripts)
# Shared by bench/*/run.sh (sourced). Defines ROOT, BUILD_DIR, PYTHON and:
#   bench_build TARGET...   configure build-bench (once) and build the targets
#   note MESSAGE...         progress on stderr (stdout is the table + JSON)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${TUNE_BENCH_BUILD_DIR:-$ROOT/build-bench}"
BUILD_TYPE="${TUNE_BENCH_BUILD_TYPE:-RelWithDebInfo}"
# Debian's python3-optuna is installed for the system interpreter; the
# `python3` first on PATH may be another one.
PYTHON="${TUNE_BENCH_PYTHON:-/usr/bin/python3}"
JOBS="${TUNE_BENCH_JOBS:-$(nproc)}"

if [[ "$(id -u)" == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

note() { echo "[bench] $*" >&2; }

bench_build() {
  local log="$BUILD_DIR/bench-build.log"
  mkdir -p "$BUILD_DIR"
  if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]] || ! grep -q "^TUNE_BUILD_BENCH:BOOL=ON" "$BUILD_DIR/CMakeCache.txt"; then
    note "configuring $BUILD_DIR ($BUILD_TYPE)"
    if ! cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DTUNE_BUILD_BENCH=ON >"$log" 2>&1; then
      tail -n 30 "$log" >&2
      echo "bench: cmake configure failed (log: $log)" >&2
      exit 1
    fi
  fi
  note "building $* (log: $log)"
  if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target "$@" >>"$log" 2>&1; then
    grep -E "error|Error" "$log" | tail -n 20 >&2 || tail -n 30 "$log" >&2
    echo "bench: build failed (log: $log)" >&2
    exit 1
  fi
}

# run_jobs: runs the command lines in the array JOBS_LIST, $PARALLEL at a
# time, job i's output in $SCRATCH/out.i (stderr in err.i); after a failure no
# new job starts, and once the running ones end it exits 1.
run_jobs() {
  local i
  : >"$SCRATCH/failed"
  for i in "${!JOBS_LIST[@]}"; do
    while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n || true; done
    [[ -s "$SCRATCH/failed" ]] && break
    run_job "$i" &
  done
  wait
  [[ -s "$SCRATCH/failed" ]] && exit 1
  return 0
}

run_job() {
  local i="$1"
  note "[$((i + 1))/${#JOBS_LIST[@]}] ${JOBS_LIST[$i]}"
  if ! eval "set -o pipefail; ${JOBS_LIST[$i]}" >"$SCRATCH/out.$i" 2>"$SCRATCH/err.$i"; then
    cat "$SCRATCH/err.$i" >&2
    echo "bench: failed: ${JOBS_LIST[$i]}" >&2
    echo "$i" >>"$SCRATCH/failed"
  fi
}
