#!/usr/bin/env bash
# Installs dependencies (scripts/install-deps.sh --for test), builds everything, and runs the
# whole test suite (fast and slow/MPI tests, the examples' --dry-run and --smoke runs, the
# commands of README.md and docs/), then the sanitizer builds and short fuzz runs
# (scripts/sanitize.sh). Each phase's time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
phases=()
current=""
phase() {  # NAME COMMAND...: runs it and records how long it took
  local name="$1" begin=$SECONDS
  current="$name"
  shift
  "$@"
  phases+=("$name $((SECONDS - begin)) s")
  current=""
}
# A failed phase still prints the times so far (CI shows only the log's tail).
trap 'status=$?; [ $status -ne 0 ] && echo "test.sh: FAILED in ${current:-?} after $((SECONDS - start)) s (${phases[*]/%/;})" >&2' EXIT
phase deps scripts/install-deps.sh --for test
phase build scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
phase ctest bash -c 'cd build && ctest --output-on-failure --timeout 600 -j"$(nproc)"'
# The core (no libtorch) under ASan+UBSan (unit tests) and TSan (driver, executors, store), and
# each fuzz target for 15 s (clang; scripts/sanitize.sh). TUNE_SANITIZE=0 skips them.
if [ "${TUNE_SANITIZE:-1}" != 0 ]; then
  phase sanitize env FUZZ_SECONDS="${FUZZ_SECONDS:-15}" scripts/sanitize.sh all
fi
echo "test.sh: passed in $((SECONDS - start)) s (${phases[*]/%/;})"
