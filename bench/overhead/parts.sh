#!/usr/bin/env bash
# bench/overhead/parts.sh CORE_BIN SCRATCH [TRIALS] [REPORTS]: the instructions each part of
# the driver's loop costs, counted by valgrind's callgrind (the same count on any box, loaded or
# not). Runs `overhead_bench_core parts` (TRIALS in-process trials of REPORTS reports, default
# 300 x 5) under callgrind and prints one JSON line: each part's inclusive instructions (the
# profiled parts are functions of their own: tuner/exec/profile.h), per trial and per result.
set -euo pipefail
BIN="${1:?usage: parts.sh CORE_BIN SCRATCH [TRIALS] [REPORTS]}"
SCRATCH="${2:?usage: parts.sh CORE_BIN SCRATCH [TRIALS] [REPORTS]}"
TRIALS="${3:-300}" REPORTS="${4:-5}"
PYTHON="${TUNE_BENCH_PYTHON:-/usr/bin/python3}"
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  echo "parts.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
fi
out="$SCRATCH/callgrind.parts.out"
valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" parts --trials "$TRIALS" --reports "$REPORTS" \
  --slots 2 --tmp "$SCRATCH" >"$SCRATCH/parts.callgrind.json" 2>"$SCRATCH/parts.callgrind.stderr"
callgrind_annotate --inclusive=yes --threshold=100 "$out" >"$SCRATCH/parts.annotate.txt" 2>/dev/null
"$PYTHON" - "$SCRATCH/parts.annotate.txt" "$TRIALS" "$REPORTS" <<'PY'
import json, re, sys
path, trials, reports = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# part -> the function (a substring of callgrind's name) whose inclusive cost it is
PARTS = {
    "loop": "tune::internal::Driver::step(",
    "launch": "tune::internal::Driver::launch_ready()",
    "start": "tune::internal::Driver::start(",
    "result": "tune::internal::Driver::on_result(",
    "end": "tune::internal::Driver::on_end(",
    "state_save": "tune::internal::Driver::save_states(",
    "commit": "tune::internal::Driver::commit(",
    "reply": "tune::internal::Driver::send(",
    "housekeeping": "tune::internal::Driver::housekeeping()",
    "progress": "tune::internal::Driver::print_progress(",
    "poll": "ThreadExecutor::poll()",
    "folder": "std::filesystem::create_directories(",
}
total, found = None, {}
line_re = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")
for line in open(path, errors="replace"):
    if total is None and line.strip().endswith("PROGRAM TOTALS"):
        total = int(line.split()[0].replace(",", ""))
        continue
    m = line_re.match(line)
    if not m:
        continue
    ir, name = int(m.group(1).replace(",", "")), m.group(2)
    for part, pattern in PARTS.items():
        if pattern in name:
            found[part] = found.get(part, 0) + ir
out = {"benchmark": "driver_parts_instructions", "trials": trials, "reports": reports, "program_ir": total,
       "parts": {p: {"ir": found.get(p, 0), "ir_per_trial": found.get(p, 0) / trials,
                     "ir_per_result": found.get(p, 0) / (trials * reports)} for p in PARTS}}
print(json.dumps(out))
PY
