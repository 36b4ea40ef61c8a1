#!/usr/bin/env bash
# Where a clean build's time goes: builds tune from scratch in build-profile/ (ccache off,
# Ninja, RelWithDebInfo, the same options as scripts/build.sh) and prints the CPU seconds of
# every compile and link, the totals, and the TOP most expensive translation units and targets.
#
#   scripts/build-profile.sh [TOP] [CMAKE_ARGS...]      e.g. scripts/build-profile.sh 25 -DTUNE_PCH=OFF
#
# CPU time (user + system, scripts/lib/cpu-time.sh) rather than wall time, so figures taken on
# a busy shared machine compare; the wall time is printed too. Log: build-profile/cpu-times.tsv.
# Environment: JOBS (default nproc), PROFILE_DIR (default build-profile), TARGETS (default all;
# tune_cli: what scripts/demo.sh builds), TUNE_UNITY (default ON, as scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
top="${1:-20}"
[ $# -gt 0 ] && shift
dir="${PROFILE_DIR:-build-profile}"
log="$PWD/$dir/cpu-times.tsv"
rm -rf "$dir"
mkdir -p "$dir"
launcher="$PWD/scripts/lib/cpu-time.sh;$log"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_CCACHE=OFF -DTUNE_UNITY="${TUNE_UNITY:-ON}" \
  "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" \
  "-DCMAKE_CXX_LINKER_LAUNCHER=$launcher" "$@" >"$dir/cmake.log"
start=$SECONDS
# shellcheck disable=SC2086
cmake --build "$dir" -j"${JOBS:-$(nproc)}" ${TARGETS:+--target $TARGETS} >"$dir/build.log"
wall=$((SECONDS - start))
awk -F'\t' -v top="$top" -v wall="$wall" '
  { t = $1; f = $2; total += t; n++
    if (f ~ /\.(o|gch)$/) { compile += t; nc++ } else { link += t }
    target = f; sub(/\.dir\/.*/, "", target); sub(/.*CMakeFiles\//, "", target)
    if (f !~ /CMakeFiles/) target = "(link) " f
    bytarget[target] += t; rows[n] = sprintf("%8.1f  %s", t, f) }
  END {
    printf "build-profile: %d steps, %.0f CPU s (compiles %.0f s in %d, links %.0f s), %d s wall\n", n, total, compile, nc, link, wall
    printf "\nthe %d most expensive steps (CPU s):\n", top
    cmd = "sort -rn | head -" top; for (i = 1; i <= n; i++) print rows[i] | cmd; close(cmd)
    printf "\nby target (CPU s):\n"
    cmd = "sort -rn | head -" top; for (t in bytarget) printf "%8.1f  %s\n", bytarget[t], t | cmd; close(cmd)
  }' "$log"
