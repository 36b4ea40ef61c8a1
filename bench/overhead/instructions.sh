#!/usr/bin/env bash
# bench/overhead/instructions.sh BUILD [BUILD...]: the instructions one more
# trial and one more result cost tune (the driver, the store, the trials'
# report() and the threads around them), counted by callgrind, for each build
# side by side: a count that does not depend on how busy the box is.
#
# Each figure is a difference of two runs of overhead_bench_core, so the
# fixed cost (start-up, the experiment's creation, the end) cancels out:
#   per trial:  (Ir of `trials` with 400 trials - Ir with 100) / 300
#   per result: (Ir of `results`, 8 trials x 800 reports - 8 x 200) / 4,800
# REPEAT (default 3) seeds per size; the medians are used. Each build dir
# needs bench/overhead_bench_core (cmake --build DIR --target overhead_bench_core;
# -DTUNE_WITH_TORCH=OFF is enough). Last line: one JSON object.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: instructions.sh BUILD [BUILD...]   (REPEAT=3)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
REPEAT="${REPEAT:-3}"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-instructions-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
OUT="$SCRATCH/counts.tsv"
: >"$OUT"

# count BUILD MODE SIZE SEED ARGS...: the instructions of one run, all threads.
count() {
  local build="$1" mode="$2" size="$3" seed="$4"
  shift 4
  local bin="$build/bench/overhead_bench_core" log="$SCRATCH/callgrind.log"
  [[ -x "$bin" ]] || { echo "instructions.sh: no $bin" >&2; exit 2; }
  valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$log" \
    "$bin" "$mode" "$@" --seed "$seed" --tmp "$SCRATCH" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" || {
    cat "$SCRATCH/stderr" "$log" >&2
    exit 1
  }
  local ir
  ir="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | tail -n 1)"
  [[ -n "$ir" ]] || { echo "instructions.sh: no count in $log" >&2; cat "$log" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\n' "$build" "$mode" "$size" "$ir" >>"$OUT"
}

# Interleaved, builds side by side within each seed.
for seed in $(seq "$REPEAT"); do
  for build in "$@"; do
    echo "[instructions] $build seed $seed" >&2
    count "$build" trials 100 "$seed" --trials 100 --slots 2
    count "$build" trials 400 "$seed" --trials 400 --slots 2
    count "$build" results 200 "$seed" --trials 8 --slots 8 --reports 200
    count "$build" results 800 "$seed" --trials 8 --slots 8 --reports 800
  done
done

/usr/bin/python3 - "$OUT" "$@" <<'PY'
import json, statistics, sys
counts = {}
for line in open(sys.argv[1]):
    build, mode, size, ir = line.split("\t")
    counts.setdefault((build, mode, int(size)), []).append(int(ir))
builds = sys.argv[2:]
def marginal(build, mode, small, large, per):
    a, b = counts[(build, mode, small)], counts[(build, mode, large)]
    return (statistics.median(b) - statistics.median(a)) / per, (min(b) - max(a)) / per, (max(b) - min(a)) / per
rows = {}
for build in builds:
    rows[build] = {"per_trial": marginal(build, "trials", 100, 400, 300),
                   "per_result": marginal(build, "results", 200, 800, 8 * 600)}
print("instructions (callgrind, all threads), median of %d seeds; (range: the extremes of the runs)" %
      len(counts[(builds[0], "trials", 100)]))
print("%-40s %28s %28s" % ("build", "per trial (1 report)", "per result (8 reporters)"))
for build in builds:
    r = rows[build]
    print("%-40s %28s %28s" % (build[-40:], "%.0f (%.0f-%.0f)" % r["per_trial"], "%.0f (%.0f-%.0f)" % r["per_result"]))
if len(builds) > 1:
    base = rows[builds[0]]
    for build in builds[1:]:
        r = rows[build]
        print("%s / %s: per trial %.2f, per result %.2f" % (build[-30:], builds[0][-30:],
              r["per_trial"][0] / base["per_trial"][0], r["per_result"][0] / base["per_result"][0]))
print(json.dumps({"benchmark": "instructions", "repeat": len(counts[(builds[0], "trials", 100)]),
                  "builds": {b: {"ir_per_trial": rows[b]["per_trial"][0], "ir_per_result": rows[b]["per_result"][0]}
                             for b in builds}}))
PY
