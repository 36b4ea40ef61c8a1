#!/usr/bin/env bash
# scripts/sanitize.sh [asan|tsan|fuzz|all|build]... : tune without libtorch, built
# with clang under sanitizers, and the tests that matter run under them.
#
#   asan  build-asan/: ASan + UBSan (-fno-sanitize-recover=undefined), every
#         unit-labelled test (ctest -L unit: no slow/cluster/slurm ones).
#         Configured with TUNE_FUZZ=ON (which adds libFuzzer's coverage
#         instrumentation to the same sanitizers), so that the fuzz targets
#         come from this build too: CI builds the core twice, not three times.
#   tsan  build-tsan/: TSan, the tests of the driver, the executors, the
#         in-process Tuner and the store (ctest -R "$TSAN_TESTS"), from one
#         binary of just their files (tsan_tests, tests/CMakeLists.txt)
#   fuzz  every libFuzzer target (tests/fuzz) for FUZZ_SECONDS (default 15)
#         each, JOBS at a time
#         each, from build-asan/ (bench/fuzz/run.sh)
#   all   asan, tsan, fuzz (the default)
#   build only build build-asan/ and build-tsan/ (both at once: each build
#         leaves a core idle part of the time), at the lowest CPU priority:
#         scripts/test.sh starts it in the background while it builds and runs
#         the main suite, so the sanitizer builds take only the CPU time the
#         main suite leaves idle; `asan`, `tsan` and `fuzz` then find them built
#
# Zero reports pass: a sanitizer report in any process (a test, the tune
# binary a test starts) fails the run. Reports go to BUILD/sanitizer-logs/
# (log_path) as well as failing the process, so one a test swallows is still
# seen; they are printed at the end. Suppressions (third-party code only, each
# explained) are in tests/sanitizers/*.supp.
#
# Environment: JOBS (build and ctest parallelism, default nproc), CC/CXX
# (default clang-14/clang++-14), FUZZ_SECONDS, TSAN_TESTS (a ctest -R regex), TUNE_UNITY
# (default ON).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
JOBS="${JOBS:-$(nproc)}"
export CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$ROOT")}"
SUPP="$ROOT/tests/sanitizers"

configure() {  # BUILD_DIR FLAGS [CMAKE_ARGS...]
  local dir="$1" flags="$2"
  shift 2
  # ccache when installed: CMakeLists.txt's TUNE_CCACHE, with the settings that let it cache
  # compiles using precompiled headers (TUNE_PCH). Unity batches (TUNE_UNITY, as
  # scripts/build.sh): these folders are built from scratch. Line tables only: a report's
  # stack has its files and lines, and the build takes a third less (tune_search's batch:
  # 56 s with -g, 37 s).
  # Ninja when installed (a fresh folder only: CMake keeps a folder's generator): it schedules
  # compiles across targets, where Make leaves a core idle at each target's link.
  local generator=()
  if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
    -DTUNE_WITH_TORCH=OFF -DTUNE_BUILD_BENCH=OFF -DTUNE_UNITY="${TUNE_UNITY:-ON}" \
    "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "$@" >/dev/null
}

# Fails (printing them) if any process wrote a sanitizer report.
check_logs() {  # LOG_DIR WHAT
  local dir="$1" what="$2"
  if compgen -G "$dir/*" >/dev/null; then
    echo "sanitize.sh: $what: sanitizer reports:" >&2
    for f in "$dir"/*; do
      echo "==== $f" >&2
      cat "$f" >&2
    done
    return 1
  fi
  echo "sanitize.sh: $what: no sanitizer reports"
}

timed() {  # LABEL COMMAND...: runs it, prints how long it took, returns its status
  local label="$1" start=$SECONDS status=0
  shift
  "$@" || status=$?
  echo "sanitize.sh: $label took $((SECONDS - start)) s$([[ $status -eq 0 ]] || echo " (failed: $status)")"
  return $status
}

build_asan() {
  # TUNE_FUZZ=ON: -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  # on everything (CMakeLists.txt).
  timed "asan configure" configure build-asan "" -DTUNE_FUZZ=ON -DTUNE_BUILD_TESTS=ON || return 1
  # The unit-labelled test binaries (and what the tuner tests start); without
  # libtorch the trainer tests are those of trainer/tabular and the registry.
  timed "asan build" cmake --build build-asan -j"$JOBS" --target \
    search_tests storage_tests schedulers_tests tuner_tests spec_tests fence_tests trainer_tests base_tests \
    memstatus_check fuzz_targets
}

build_tsan() {
  # tsan_tests: only the test files whose suites TSAN_TESTS runs (tests/CMakeLists.txt).
  timed "tsan configure" configure build-tsan "-fsanitize=thread -fno-omit-frame-pointer" -DTUNE_TSAN_TESTS=ON || return 1
  timed "tsan build" cmake --build build-tsan -j"$JOBS" --target tsan_tests memstatus_check
}

# Both sanitizer builds at once, at nice 19 (the `build` mode).
build_both() {
  local status=0 asan tsan
  # With the kernel's autogroups (sched_autogroup_enabled), nice only ranks processes within one
  # session: the group of a session of its own (scripts/test.sh starts this with setsid) gets its
  # own nice, or it takes half the CPU from the main build whatever its processes' nice.
  echo 19 >"/proc/$BASHPID/autogroup" 2>/dev/null || true
  (renice -n 19 -p "$BASHPID" >/dev/null; build_asan) &
  asan=$!
  (renice -n 19 -p "$BASHPID" >/dev/null; build_tsan) &
  tsan=$!
  wait "$asan" || status=1
  wait "$tsan" || status=1
  return $status
}

run_asan() {
  local dir=build-asan logs="$ROOT/build-asan/sanitizer-logs"
  build_asan || return 1
  rm -rf "$logs" && mkdir -p "$logs"
  export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:log_path=$logs/asan"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:suppressions=$SUPP/ubsan.supp:log_path=$logs/ubsan"
  local status=0
  (cd "$dir" && timed "asan ctest" ctest -L unit --no-tests=error -j"$JOBS" --timeout 900 --output-on-failure) || status=1
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
  check_logs "$logs" "asan+ubsan" || status=1
  return $status
}

TSAN_TESTS="${TSAN_TESTS:-^(Driver|ThreadExecutor|Tuner\.|SchedulerIntegration|Store|Events|ForEachResult|ResultColumns)}"

run_tsan() {
  local dir=build-tsan logs="$ROOT/build-tsan/sanitizer-logs"
  build_tsan || return 1
  rm -rf "$logs" && mkdir -p "$logs"
  export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp:log_path=$logs/tsan"
  local status=0
  (cd "$dir" && timed "tsan ctest" ctest -R "$TSAN_TESTS" -L unit --no-tests=error -j"$JOBS" --timeout 900 --output-on-failure) || status=1
  unset TSAN_OPTIONS
  check_logs "$logs" "tsan" || status=1
  return $status
}

run_fuzz() {
  if [[ ! -f build-asan/CMakeCache.txt ]]; then
    timed "asan configure" configure build-asan "" -DTUNE_FUZZ=ON -DTUNE_BUILD_TESTS=ON || return 1
  fi
  # Under CI a fixed seed: the gate takes the same paths every run (bench/run
  # fuzz, with a random seed, is where new paths are looked for).
  local seed=()
  [[ "${CI:-}" == true ]] && seed=(--seed "${FUZZ_SEED:-1}")
  TUNE_FUZZ_BUILD_DIR="$ROOT/build-asan" timed "fuzz" bench/fuzz/run.sh --seconds "${FUZZ_SECONDS:-15}" --jobs "$JOBS" "${seed[@]}"
}

modes=("$@")
[[ ${#modes[@]} -eq 0 ]] && modes=(all)
failed=()
for mode in "${modes[@]}"; do
  case "$mode" in
    asan) run_asan || failed+=(asan) ;;
    tsan) run_tsan || failed+=(tsan) ;;
    fuzz) run_fuzz || failed+=(fuzz) ;;
    build) build_both || failed+=(build) ;;
    all)
      run_asan || failed+=(asan)
      run_tsan || failed+=(tsan)
      run_fuzz || failed+=(fuzz)
      ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: scripts/sanitize.sh [asan|tsan|fuzz|all|build]..." >&2; exit 2 ;;
  esac
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "sanitize.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "sanitize.sh: passed: ${modes[*]}"
