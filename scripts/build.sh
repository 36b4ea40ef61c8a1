#!/usr/bin/env bash
# Configures and builds tune in ./build (RelWithDebInfo; Ninja and ccache when installed).
#
#   scripts/build.sh          everything `cmake --build` builds: tune, tune-full, the examples,
#                             the tests (what scripts/test.sh runs)
#   scripts/build.sh --tune   only the programs tune and tune-full and what they link, configured
#                             without the tests and benchmarks (scripts/demo.sh; no test packages
#                             needed); scripts/build.sh later adds the rest to the same folder
#
# Environment: JOBS (default: nproc), TUNE_UNITY (default ON: unity batches, see CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
what=all
case "${1:-}" in
  "") ;;
  --tune) what=tune ;;
  *) echo "usage: scripts/build.sh [--tune]" >&2; exit 2 ;;
esac
# Unity batches (TUNE_UNITY): a build from scratch in about half the CPU time; a change then
# recompiles its batch: TUNE_UNITY=OFF scripts/build.sh for a folder you edit in.
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_UNITY="${TUNE_UNITY:-ON}")
# Ninja when installed (a fresh folder only: CMake keeps a folder's generator).
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then args+=(-G Ninja); fi
if [ $what = tune ]; then
  args+=(-DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF)
  targets=(--target tune_cli)
else
  args+=(-DTUNE_BUILD_TESTS=ON -DTUNE_BUILD_BENCH=ON)
  targets=()
fi
cmake -S . -B build "${args[@]}" >/dev/null
# Ninja's progress line: finished/total, percent, seconds so far.
export NINJA_STATUS="${NINJA_STATUS:-[%f/%t %p %es] }"
cmake --build build -j"${JOBS:-$(nproc)}" "${targets[@]}"
