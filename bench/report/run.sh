#!/usr/bin/env bash
# bench/run report [--quick]: the HTML report of a large sweep. A store of
# 10,000 trials x 100 results is written through the Store API; then the
# report's generation time and size, the time headless Chromium takes to load
# it and draw every chart (real time, in the page: navigation start to the
# marker the page sets when all charts are drawn; render_time.py), and, on the
# same trials, Optuna 3.1's plot_optimization_history +
# plot_parallel_coordinate written with write_html. Method and figures:
# bench/report/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

TRIALS=10000 RESULTS=100 REPEAT=3
for arg in "$@"; do
  case "$arg" in
    --quick) TRIALS=1000 RESULTS=20 ;;
    *) echo "bench/run report: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done
command -v chromium >/dev/null || { echo "bench/run report: needs chromium (apt-get install chromium)" >&2; exit 1; }

bench_build bench_report
BIN="$BUILD_DIR/bench/report_bench"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-report-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

note "load average $(cut -d' ' -f1-3 /proc/loadavg)"
note "writing a store of $TRIALS trials x $RESULTS results"
"$BIN" make "$SCRATCH/store" --trials "$TRIALS" --results "$RESULTS"
note "generating the report ($REPEAT times)"
"$BIN" time "$SCRATCH/store" "$SCRATCH/report.html" --repeat "$REPEAT" >"$SCRATCH/tune.json"
if "$PYTHON" -c "import optuna, plotly" 2>/dev/null; then
  note "optuna: plot_optimization_history + plot_parallel_coordinate ($REPEAT times)"
  "$PYTHON" "$ROOT/bench/peers/optuna_report.py" "$SCRATCH/store/tune.db" "$SCRATCH" "$REPEAT" >"$SCRATCH/optuna.json"
else
  note "optuna or plotly is not importable by $PYTHON: the peer is skipped (apt-get install python3-optuna python3-plotly)"
  echo '{}' >"$SCRATCH/optuna.json"
fi

note "rendering in headless Chromium ($REPEAT times, real time)"
"$PYTHON" "$ROOT/bench/report/render_time.py" "$SCRATCH/report.html" "$REPEAT" >"$SCRATCH/chromium.json"

"$PYTHON" - "$SCRATCH" "$TRIALS" "$RESULTS" <<'PY'
import json, os, re, statistics, sys
d, trials, results = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tune = json.load(open(os.path.join(d, "tune.json")))
chromium = json.load(open(os.path.join(d, "chromium.json")))
optuna = json.load(open(os.path.join(d, "optuna.json")))
page = open(os.path.join(d, "report.html"), encoding="utf-8").read()
data = json.loads(re.search(r'<script type="application/json" id="tune-data">(.*?)</script>', page, re.S).group(1))
points = data["experiments"][0]["summary"]["curve_points"]
med = statistics.median
gen, size = med(tune["seconds"]), tune["bytes"]
first, every = med(chromium["first_ms"]) / 1000, med(chromium["all_ms"]) / 1000
print(f"HTML report of {trials:,} trials x {results} results ({trials * results:,} results; curves keep {points:,} points)")
print(f"{'':<38}{'tune report':>12}{'optuna 3.1':>12}{'goal':>8}")
o_gen = med(optuna["seconds"]) if optuna.get("seconds") else None
def cell(v, f):
    return f"{v:{f}}" if v is not None else "-"
print(f"{'generation (s, median of ' + str(len(tune['seconds'])) + ')':<38}{gen:>12.2f}{cell(o_gen, '12.2f'):>12}{'<= 2':>8}")
o_cpu = med(optuna["cpu_seconds"]) if optuna.get("cpu_seconds") else None
print(f"{'generation, CPU time (s)':<38}{med(tune['cpu_seconds']):>12.2f}{cell(o_cpu, '12.2f'):>12}{'':>8}")
print(f"{'file size (MB)':<38}{size / 1e6:>12.2f}{cell(optuna.get('bytes', 0) / 1e6 if optuna else None, '12.2f'):>12}{'<= 5':>8}")
print(f"{'Chromium, first screen drawn (s)':<38}{first:>12.2f}{'-':>12}{'<= 2':>8}")
print(f"{'Chromium, every chart drawn (s)':<38}{every:>12.2f}{'-':>12}{'':>8}")
print(f"  (median of {len(chromium['first_ms'])}, in the page since navigation start, 1400x1000 window: "
      f"{chromium['first_drawn']} of {chromium['charts']} charts in the first screen, {chromium['renderer']})")
print("  optuna: plot_optimization_history + plot_parallel_coordinate, write_html (2 files, plotly.js inlined in each)")
print(f"load average at the end: {open('/proc/loadavg').read().split()[0]}")
summary = {"trials": trials, "results_per_trial": results, "curve_points": points,
           "generation_s": gen, "bytes": size, "first_screen_s": first, "every_chart_s": every,
           "charts": chromium["charts"], "first_screen_charts": chromium["first_drawn"],
           "first_ms": chromium["first_ms"], "all_ms": chromium["all_ms"], "tune_generation_s": tune["seconds"],
           "tune_generation_cpu_s": tune["cpu_seconds"]}
if o_gen is not None:
    print(f"generation ratio (optuna / tune): {o_gen / gen:.1f}x wall, {o_cpu / med(tune['cpu_seconds']):.1f}x CPU")
    summary.update({"optuna_generation_s": o_gen, "optuna_bytes": optuna["bytes"], "optuna_runs_s": optuna["seconds"],
                    "optuna_generation_cpu_s": o_cpu, "generation_ratio": o_gen / gen,
                    "generation_cpu_ratio": o_cpu / med(tune["cpu_seconds"])})
print(json.dumps(summary))
PY
