#!/usr/bin/env bash
# bench/run fuzz [--seconds N | --quick] [TARGET...]: builds the libFuzzer
# targets of tests/fuzz (clang, -fsanitize=fuzzer,address,undefined, no
# libtorch) into build-fuzz/ and runs each for N seconds (default 60;
# --quick: 10) from its seed corpus (tests/fuzz/corpus/TARGET) plus what
# earlier runs found (build-fuzz/corpus/TARGET). Prints a table (target,
# execs/s, coverage, corpus size, findings) and, last, one JSON line.
# Findings (crash-*, leak-*, timeout-*, oom-* inputs) are kept in
# build-fuzz/findings/TARGET/; the exit status is 1 when there is any.
# --seed N: the same mutations each run (scripts/sanitize.sh under CI uses
# 1, so a gate does not fail on a path only one run happened to take).
# --jobs N: N targets at a time (default 1; scripts/sanitize.sh: one per core).
# Targets: every tests/fuzz/NAME_fuzz.cpp (sweep, protocol, filter,
# store_json, csv, result_line, serve_http, ...). More: bench/fuzz/README.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${TUNE_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
JOBS="${TUNE_BENCH_JOBS:-$(nproc)}"
CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}"
ALL_TARGETS=()
for source in "$ROOT"/tests/fuzz/*_fuzz.cpp; do
  name="$(basename "$source" _fuzz.cpp)"
  ALL_TARGETS+=("$name")
done

note() { echo "[fuzz] $*" >&2; }

SECONDS_EACH=60
SEED=0  # 0: libFuzzer picks one (a new path each run)
PARALLEL=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) SECONDS_EACH=10 ;;
    --seconds) SECONDS_EACH="${2:?--seconds needs a number}"; shift ;;
    --seconds=*) SECONDS_EACH="${1#--seconds=}" ;;
    --seed) SEED="${2:?--seed needs a number}"; shift ;;
    --seed=*) SEED="${1#--seed=}" ;;
    --jobs) PARALLEL="${2:?--jobs needs a number}"; shift ;;
    --jobs=*) PARALLEL="${1#--jobs=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/run fuzz: unknown option '$1' (options: --seconds N, --quick, --seed N, --jobs N, TARGET...)" >&2; exit 2 ;;
    *)
      if [[ ! " ${ALL_TARGETS[*]} " == *" $1 "* ]]; then
        echo "bench/run fuzz: unknown target '$1' (targets: ${ALL_TARGETS[*]})" >&2
        exit 2
      fi
      targets+=("$1") ;;
  esac
  shift
done
[[ ${#targets[@]} -eq 0 ]] && targets=("${ALL_TARGETS[@]}")
if ! [[ "$SEED" =~ ^[0-9]+$ ]]; then
  echo "bench/run fuzz: --seed wants a whole number (0: a random one)" >&2
  exit 2
fi
if ! [[ "$PARALLEL" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench/run fuzz: --jobs wants a whole number >= 1" >&2
  exit 2
fi
if ! [[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || [[ "$SECONDS_EACH" -lt 1 ]]; then
  echo "bench/run fuzz: --seconds wants a whole number of seconds >= 1" >&2
  exit 2
fi
if ! command -v "$CXX" >/dev/null; then
  echo "bench/run fuzz: $CXX not found (scripts/install-deps.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi

# --- build
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/fuzz-build.log"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
build_start=$SECONDS
note "configuring and building ${targets[*]/#/fuzz_} in $BUILD_DIR (log: $log)"
configure=(cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" "${launcher[@]}"
  -DTUNE_FUZZ=ON -DTUNE_WITH_TORCH=OFF -DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF)
# A build dir already configured with TUNE_FUZZ=ON (scripts/sanitize.sh's
# build-asan, tests included) is used as it is.
grep -q '^TUNE_FUZZ:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null && configure=(true)
: >"$log"
if ! "${configure[@]}" >>"$log" 2>&1 ||
   ! cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]/#/fuzz_}" >>"$log" 2>&1; then
  grep -E "error|Error" "$log" | tail -n 20 >&2 || tail -n 30 "$log" >&2
  echo "bench/run fuzz: build failed (log: $log)" >&2
  exit 1
fi
note "built in $((SECONDS - build_start)) s"

# --- run
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0}"
rows=()
total_findings=0
# A timeout is a finding only when its input is slow on its own: on a loaded
# box (other fuzzers, a build, the kernel reclaiming memory) libFuzzer's wall-
# clock alarm can fire inside the allocator. Such an input is run again alone;
# when it finishes inside the limit it is kept in findings/TARGET/stalls/ (not
# counted as a finding) and fuzzing goes on for the rest of the target's time.
TIMEOUT=10
reproduces_slowly() {  # BINARY INPUT: 0 when the input alone runs past the limit (or fails)
  local start=$SECONDS
  if ! timeout $((TIMEOUT * 3)) "$1" -timeout="$TIMEOUT" -runs=1 "$2" >/dev/null 2>&1; then return 0; fi
  [[ $((SECONDS - start)) -ge $TIMEOUT ]]
}
children_cpu_ticks() { awk '{print $16 + $17}' "/proc/$1/stat"; }  # PID: cutime + cstime of its waited-for children
# fuzz_one TARGET: fuzzes it for SECONDS_EACH (in a subshell of its own) and writes its row
# (target fuzzed cpu runs execs cov ft corp found stalls) to $BUILD_DIR/fuzz-TARGET.row.
fuzz_one() {
  local target="$1" seeds corpus findings out segment binary marker target_start cpu_start runs stalls status
  local last_line left line segment_runs stalled input fuzzed cpu execs cov ft corp found me=$BASHPID
  seeds="$ROOT/tests/fuzz/corpus/$target"
  corpus="$BUILD_DIR/corpus/$target"
  findings="$BUILD_DIR/findings/$target"
  out="$BUILD_DIR/fuzz-$target.log"
  segment="$BUILD_DIR/fuzz-$target.segment.log"
  binary="$BUILD_DIR/tests/fuzz/fuzz_$target"
  mkdir -p "$corpus" "$findings"
  note "fuzz_$target for ${SECONDS_EACH} s (log: $out)"
  : >"$out"
  marker="$BUILD_DIR/fuzz-$target.started"  # findings of this run are newer than it
  touch "$marker"
  target_start=$SECONDS
  cpu_start="$(children_cpu_ticks "$me")"
  runs=0 stalls=0 status=0 last_line=""
  while :; do
    left=$((SECONDS_EACH - (SECONDS - target_start)))
    [[ $left -lt 1 ]] && break
    # New inputs go to the first directory (build-fuzz/corpus), never to the seeds.
    set +e
    "$binary" "$corpus" "$seeds" \
      -max_total_time="$left" -timeout="$TIMEOUT" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -print_final_stats=1 -artifact_prefix="$findings/" -seed="$SEED" >"$segment" 2>&1
    status=$?
    set -e
    cat "$segment" >>"$out"
    # "#N DONE cov: C ft: F corp: K/SIZE ... exec/s: E" (or the last pulse before a finding)
    line="$(grep -aE '^#[0-9]+' "$segment" | tail -n 1 || true)"
    [[ -n "$line" ]] && last_line="$line"
    segment_runs="$(grep -aoE 'stat::number_of_executed_units: [0-9]+' "$segment" | grep -oE '[0-9]+$' || true)"
    [[ -z "$segment_runs" ]] && segment_runs="$(grep -oE '^#[0-9]+' <<<"$line" | tr -d '#' || true)"
    runs=$((runs + ${segment_runs:-0}))
    [[ $status -eq 0 ]] && break
    # Only timeouts that do not reproduce let fuzzing go on.
    stalled=""
    for input in "$findings"/timeout-*; do
      [[ -f "$input" && "$input" -nt "$marker" ]] || continue
      if reproduces_slowly "$binary" "$input"; then stalled=""; break; fi
      mkdir -p "$findings/stalls"
      mv "$input" "$findings/stalls/"
      stalled=yes
    done
    [[ -z "$stalled" ]] && break
    stalls=$((stalls + 1))
    note "fuzz_$target: a timeout its input does not reproduce alone (a stall of the box; kept in $findings/stalls/); going on"
    status=0
  done
  rm -f "$segment"
  fuzzed=$((SECONDS - target_start))
  cpu=$((($(children_cpu_ticks "$me") - cpu_start) / $(getconf CLK_TCK)))
  execs=$((runs / (fuzzed > 0 ? fuzzed : 1)))
  cov="$(grep -oE 'cov: [0-9]+' <<<"$last_line" | grep -oE '[0-9]+' || echo 0)"
  ft="$(grep -oE 'ft: [0-9]+' <<<"$last_line" | grep -oE '[0-9]+' || echo 0)"
  corp="$(grep -oE 'corp: [0-9]+' <<<"$last_line" | grep -oE '[0-9]+' || echo 0)"
  found="$(find "$findings" -maxdepth 1 -type f -newer "$marker" | wc -l)"
  rm -f "$marker"
  if [[ $status -ne 0 && $found -eq 0 ]]; then
    found=1  # it died without writing an input (e.g. in initialization)
    note "fuzz_$target exited $status without a finding file; see $out"
  fi
  if [[ $found -gt 0 ]]; then
    note "fuzz_$target: FINDINGS in $findings (log: $out):"
    grep -aE 'ERROR: |FUZZ FINDING|runtime error|SUMMARY' "$out" | head -n 5 >&2 || true
  fi
  echo "$target $fuzzed $cpu $runs $execs $cov $ft $corp $found $stalls" >"$BUILD_DIR/fuzz-$target.row"
}
for target in "${targets[@]}"; do
  rm -f "$BUILD_DIR/fuzz-$target.row"
  while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n || true; done
  (fuzz_one "$target") &
done
wait
for target in "${targets[@]}"; do
  row="$(cat "$BUILD_DIR/fuzz-$target.row" 2>/dev/null || echo "$target 0 0 0 0 0 0 0 1 0")"  # no row: it died
  rm -f "$BUILD_DIR/fuzz-$target.row"
  read -r _ _ _ _ _ _ _ _ found _ <<<"$row"
  total_findings=$((total_findings + found))
  rows+=("$row")
done

# --- table and JSON
printf '\nfuzzing, %s s per target (clang -fsanitize=fuzzer,address,undefined; %s cores)\n' "$SECONDS_EACH" "$(nproc)"
printf '%-12s %8s %8s %12s %8s %9s %9s %7s %9s %7s\n' target seconds cpu_s runs execs/s coverage features corpus findings stalls
json=""
for row in "${rows[@]}"; do
  read -r target fuzzed cpu runs execs cov ft corp found stalls <<<"$row"
  printf '%-12s %8s %8s %12s %8s %9s %9s %7s %9s %7s\n' "$target" "$fuzzed" "$cpu" "$runs" "$execs" "$cov" "$ft" "$corp" "$found" "$stalls"
  json+="${json:+,}\"$target\":{\"seconds\":$fuzzed,\"cpu_seconds\":$cpu,\"runs\":$runs,\"execs_per_s\":$execs,\"coverage\":$cov,\"features\":$ft,\"corpus\":$corp,\"findings\":$found,\"stalls\":$stalls}"
done
printf 'seconds: wall time fuzzed; cpu_s: CPU time the fuzzer got (less than seconds on a shared box);\n'
printf 'coverage: edges covered (libFuzzer cov:); corpus: inputs kept; findings: %s/findings/TARGET/;\n' "$BUILD_DIR"
printf 'stalls: timeouts whose input ran inside the limit when run again alone (findings/TARGET/stalls/)\n'
printf '{"benchmark":"fuzz","seconds_per_target":%s,"cores":%s,"figures":{%s}}\n' "$SECONDS_EACH" "$(nproc)" "$json"
[[ $total_findings -eq 0 ]]
