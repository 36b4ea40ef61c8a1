#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (fast and slow/MPI tests),
# then the sanitizer builds and short fuzz runs (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd build && ctest --output-on-failure --timeout 600 -j2)
# The core (no libtorch) under ASan+UBSan (unit tests) and TSan (driver, executors, store), and
# each fuzz target for 15 s (clang; scripts/sanitize.sh). TUNE_SANITIZE=0 skips them.
if [ "${TUNE_SANITIZE:-1}" != 0 ]; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-15}" scripts/sanitize.sh all
fi
