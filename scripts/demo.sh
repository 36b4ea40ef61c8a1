#!/usr/bin/env bash
# From a fresh clone to a first sweep: installs what building and running tune needs (Debian
# packages, scripts/install-deps.sh --for demo), builds the programs tune and tune-full only
# (scripts/build.sh --tune), runs an example sweep (ASHA early stopping on noisy Branin curves)
# with its progress table, queries the store and writes the HTML report.
# Everything lands in ./demo_results; the README's `build/tune ...` commands work afterwards.
# The test suite and its extra packages are scripts/test.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cores=$(nproc)
say() { printf '\n== demo [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*"; }

# apt took ~2.5 min for these packages on a fresh Debian 12 (a debootstrap chroot, 2 cores: the
# demo in 7 min 2 s, 4 min 17 s with the packages there); the build of tune and tune-full is
# ~8 CPU min with an empty ccache (unity batches, libtorch precompiled: scripts/build-profile.sh
# TARGETS=tune_cli measures it), seconds when ccache has seen the sources; the sweep seconds.
build_min=$(((8 + cores - 1) / cores))
say "this takes about $((build_min + 1)) min on $cores cores: Debian packages (when missing, ~2.5 min more), building tune (~$build_min min), one sweep (seconds)"

say "1/4 Debian packages (scripts/install-deps.sh --for demo)"
scripts/install-deps.sh --for demo

say "2/4 building tune and tune-full in build/ (scripts/build.sh --tune; [done/total percent seconds])"
scripts/build.sh --tune

say "3/4 an ASHA sweep of 30 trials on noisy Branin curves (examples/sweeps/asha_stopping.yaml)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf demo_results
build/tune run examples/sweeps/asha_stopping.yaml --storage demo_results --progress-interval 1 \
  --report demo_results/report.html

say "4/4 querying the store"
echo "\$ build/tune trials branin-asha-stopping --storage demo_results --sort loss --limit 5"
build/tune trials branin-asha-stopping --storage demo_results --sort loss --limit 5
echo
echo "\$ build/tune best branin-asha-stopping --storage demo_results"
build/tune best branin-asha-stopping --storage demo_results

say "done in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
cat <<MSG
The HTML report of the sweep (open it in a browser): $PWD/demo_results/report.html
Next:
  build/tune run examples/sweeps/branin.yaml        # the README's sweeps; examples/ has more
  build/tune run examples/sweeps/pbt.yaml --dry-run # what a sweep would run, creating nothing
  build/tune --help
  scripts/test.sh                                   # the test suite (installs its own packages)
MSG
