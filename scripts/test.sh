#!/usr/bin/env bash
# Installs dependencies (scripts/install-deps.sh --for test), builds everything, and runs the
# whole test suite (fast and slow/MPI tests, the examples' --dry-run and --smoke runs, the
# commands of README.md and docs/), then the tests under the sanitizers and short fuzz runs
# (scripts/sanitize.sh; their builds run in the background from the start, at the lowest CPU
# priority: build-logs/sanitize-build.log). Each phase's time is printed at the end.
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
# A failed phase still prints the times so far (CI shows only the log's tail); the background
# sanitizer builds (below), if still running, are stopped with their compilers.
sanitize_builds=""
trap 'status=$?; [ -n "$sanitize_builds" ] && kill -- "-$sanitize_builds" 2>/dev/null; [ $status -ne 0 ] && echo "test.sh: FAILED in ${current:-?} after $((SECONDS - start)) s (${phases[*]/%/;})" >&2' EXIT
phase deps scripts/install-deps.sh --for test
# The core (no libtorch) under ASan+UBSan (unit tests) and TSan (driver, executors, store), and
# each fuzz target for 15 s (clang; scripts/sanitize.sh). TUNE_SANITIZE=0 skips them.
sanitize="${TUNE_SANITIZE:-1}"
# Their two builds start now, in the background at the lowest CPU priority: the main build and
# its tests leave a core idle about a third of the time (tests that wait on timeouts, peers and
# processes; a build's last batches), and the sanitizer builds take that time instead of
# running after them.
if [ "$sanitize" != 0 ]; then
  mkdir -p build-logs
  # Its own process group (setsid), so that the trap above can stop its compilers too.
  setsid scripts/sanitize.sh build >build-logs/sanitize-build.log 2>&1 &
  sanitize_builds=$!
fi
phase build scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
phase ctest bash -c 'cd build && ctest --output-on-failure --timeout 600 -j"$(nproc)"'
if [ "$sanitize" != 0 ]; then
  sanitize_wait() {  # the background builds' end (their log, if they failed)
    local status=0
    wait "$sanitize_builds" || status=$?
    sanitize_builds=""
    grep -E '^sanitize.sh: (asan|tsan) (configure|build) took' build-logs/sanitize-build.log || true
    if [ $status -ne 0 ]; then tail -n 60 build-logs/sanitize-build.log >&2; fi
    return $status
  }
  phase sanitize-builds-rest sanitize_wait
  phase sanitize env FUZZ_SECONDS="${FUZZ_SECONDS:-15}" scripts/sanitize.sh all
fi
echo "test.sh: passed in $((SECONDS - start)) s (${phases[*]/%/;})"
