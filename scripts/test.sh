#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (fast and slow/MPI tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd build && ctest --output-on-failure --timeout 600 -j2
