#!/usr/bin/env bash
# bench/overhead/compare_commits.sh BASE_BUILD NEW_BUILD [REPEAT]: the
# orchestration overhead and scheduler cost of two builds of tune side by side
# (a refactoring's before/after), runs interleaved so load hits both alike.
# Each build dir must have bench/overhead_bench_core and bench/scheduler_bench
# (cmake --build DIR --target overhead_bench_core scheduler_bench; a build
# with -DTUNE_WITH_TORCH=OFF is enough). Prints one table; medians of REPEAT
# (default 3) runs.
set -euo pipefail
BASE="${1:?usage: compare_commits.sh BASE_BUILD NEW_BUILD [REPEAT]}"
NEW="${2:?usage: compare_commits.sh BASE_BUILD NEW_BUILD [REPEAT]}"
REPEAT="${3:-3}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-compare-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
OUT="$SCRATCH/runs.tsv"
: >"$OUT"

run() {  # run SIDE LABEL COMMAND...: the JSON last line of one run
  local side="$1" label="$2"
  shift 2
  local line
  line="$("$@" 2>"$SCRATCH/stderr" | tail -n 1)" || { cat "$SCRATCH/stderr" >&2; exit 1; }
  printf '%s\t%s\t%s\n' "$side" "$label" "$line" >>"$OUT"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in $(seq "$REPEAT"); do
  for side in base new; do
    dir="$BASE"
    [[ $side == new ]] && dir="$NEW"
    core="$dir/bench/overhead_bench_core" sched="$dir/bench/scheduler_bench"
    run "$side" trials "$core" trials --trials 1000 --slots 2 --seed "$i" --tmp "$SCRATCH"
    run "$side" mpi "$core" mpi --trials 200 --slots 2 --seed "$i" --tmp "$SCRATCH"
    run "$side" results "$core" results --trials 8 --slots 8 --reports 5000 --seed "$i" --tmp "$SCRATCH"
    run "$side" memory "$core" memory --trials 10000 --slots 2 --seed "$i" --tmp "$SCRATCH"
    "$sched" scale --trials 10000 --workers 64 --max-t 81 --rf 3 >"$SCRATCH/scale.jsonl"
    while IFS= read -r line; do printf '%s\tscale\t%s\n' "$side" "$line" >>"$OUT"; done <"$SCRATCH/scale.jsonl"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    side, label, text = line.rstrip("\n").split("\t", 2)
    try:
        data = json.loads(text)
    except ValueError:
        continue
    if label == "scale":
        label = "scale:" + str(data.get("scheduler", data.get("name", "?")))
    for key, value in data.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.setdefault((label, key), {}).setdefault(side, []).append(value)
print(f"| benchmark | figure | before | after | after/before |")
print(f"|---|---|---|---|---|")
for (label, key), sides in sorted(rows.items()):
    if "base" not in sides or "new" not in sides:
        continue
    b, n = statistics.median(sides["base"]), statistics.median(sides["new"])
    if b == n and len(set(sides["base"])) == 1:
        continue  # a parameter, not a measurement
    ratio = f"{n / b:.2f}" if b else "-"
    print(f"| {label} | {key} | {b:.4g} | {n:.4g} | {ratio} |")
PY
