#!/usr/bin/env bash
# Installs dependencies, builds, runs the example Branin sweep, and queries it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf demo_results
build/tune run examples/sweeps/branin.yaml --storage demo_results --progress-interval 2
build/tune trials branin-random --storage demo_results --sort loss --limit 5
build/tune best branin-random --storage demo_results
