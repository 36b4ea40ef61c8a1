#!/usr/bin/env bash
# bench/run serve [--quick]: `tune serve` under load (issue 12). For the taxi
# MLP (tabular_mlp) and the churn XGBoost model of examples/tabular/: a short
# sweep, then `tune serve` on 127.0.0.1 with wrk (Debian `wrk`) posting one-row
# requests at 1, 8 and 64 connections (requests/s, p50/p99 latency), next to
# the bare model's time per request measured in the same run (serve_bench:
# the same instance through the table, preprocessors, model and JSON answer,
# no HTTP). "adds p50" = wrk's p50 at 1 connection - the bare model's p50.
# Figures and method: bench/README.md ("serve").
# `bench/run serve attack` is the same server under attack: bench/serve/attack.sh.
set -euo pipefail
if [[ "${1:-}" == attack ]]; then
  shift
  exec "$(dirname "${BASH_SOURCE[0]}")/attack.sh" "$@"
fi
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
SECONDS_EACH=8
if [[ "${1:-}" == --quick ]]; then SECONDS_EACH=2; fi
command -v wrk >/dev/null || { echo "bench/run serve: needs wrk (apt-get install wrk)" >&2; exit 1; }
bench_build tune_cli serve_bench
TUNE="$BUILD_DIR/tune"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-serve-XXXXXX")"
SERVER=""
cleanup() { [[ -n "$SERVER" ]] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$SCRATCH"; }
trap cleanup EXIT
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
TAXI='{"passenger_count": 1, "trip_distance": 2.1, "fare_amount": 11.5, "trip_minutes": 9, "hour": 22, "payment_type": "card", "vendor": "B"}'
CHURN='{"tenure_months": 3, "monthly_charges": 89.5, "contract": "month-to-month", "internet": "fiber", "payment_method": "electronic check", "senior": 0, "support_calls": 4}'

RESULTS="$SCRATCH/results.tsv"
: >"$RESULTS"
bench_model() {  # NAME SWEEP INSTANCE
  local name="$1" sweep="$2" instance="$3"
  note "$name: sweep"
  "$TUNE" run "$ROOT/examples/tabular/$sweep" --storage "$SCRATCH/store" --slots 2 --quiet >/dev/null
  local checkpoint
  checkpoint="$("$TUNE" predict "$name" --storage "$SCRATCH/store" --input "$ROOT/examples/tabular/${4}" \
    --output "$SCRATCH/$name.csv" | sed -n 's/^best trial .*checkpoint //p')"
  note "$name: bare model ($checkpoint)"
  printf '%s\tbare\t%s\n' "$name" "$("$BUILD_DIR/bench/serve_bench" "$checkpoint" "$instance")" >>"$RESULTS"
  local port=$((20000 + RANDOM % 20000))
  "$TUNE" serve "$name" --storage "$SCRATCH/store" --port "$port" >"$SCRATCH/serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do grep -q "serving" "$SCRATCH/serve.log" && break; sleep 0.1; done
  grep -q "serving" "$SCRATCH/serve.log" || { cat "$SCRATCH/serve.log" >&2; exit 1; }
  cat >"$SCRATCH/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"instances": [$instance]}'
wrk.headers["Content-Type"] = "application/json"
LUA
  for c in 1 8 64; do
    note "$name: wrk, $c connection(s), ${SECONDS_EACH}s"
    local threads=$((c < 2 ? 1 : 2))
    wrk -t"$threads" -c"$c" -d"${SECONDS_EACH}s" --latency -s "$SCRATCH/post.lua" \
      "http://127.0.0.1:$port/v1/models/$name:predict" >"$SCRATCH/wrk.$name.$c.txt"
    printf '%s\twrk%s\t%s\n' "$name" "$c" "$SCRATCH/wrk.$name.$c.txt" >>"$RESULTS"
  done
  kill -TERM "$SERVER"
  wait "$SERVER" || true
  SERVER=""
}
bench_model taxi-mlp taxi_mlp.yaml "$TAXI" trips.csv
bench_model churn-xgboost churn_xgboost.yaml "$CHURN" churn.csv

"$PYTHON" - "$RESULTS" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, re, sys
def us(text):  # wrk's "1.23ms" / "456.00us" / "1.2s"
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
rows, bare, out = [], {}, {}
for line in open(sys.argv[1]):
    name, kind, text = line.rstrip("\n").split("\t", 2)
    if kind == "bare":
        bare[name] = json.loads(text)
        continue
    text = open(text).read()
    lat = dict(re.findall(r"^\s+(50|99)(?:\.000)?%\s+(\S+)$", text, re.M))
    found = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not found or "50" not in lat or "99" not in lat:
        sys.exit("bench/run serve: cannot read wrk's output:\n" + text)
    rps = float(found.group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    rows.append((name, int(kind[3:]), rps, us(lat["50"]), us(lat["99"]), int(errors.group(1)) if errors else 0))
print(f"tune serve, one-row POST /v1/models/NAME:predict, wrk on 127.0.0.1 (load {sys.argv[2]} -> {sys.argv[3]}):")
print("| model | connections | requests/s | p50 µs | p99 µs | non-2xx |\n|---|---|---|---|---|---|")
for name, c, rps, p50, p99, err in rows:
    print(f"| {name} | {c} | {rps:.0f} | {p50:.0f} | {p99:.0f} | {err} |")
    out.setdefault(name, {})[f"c{c}"] = {"rps": rps, "p50_us": p50, "p99_us": p99, "non_2xx": err}
print("\n| model | bare model p50 µs (table + preprocessors + model + JSON) | wrk p50 at 1 connection µs | serving adds µs |\n|---|---|---|---|")
for name, b in bare.items():
    one = out[name]["c1"]["p50_us"]
    out[name]["bare_p50_us"] = b["p50_us"]
    out[name]["adds_p50_us"] = one - b["p50_us"]
    print(f"| {name} | {b['p50_us']:.1f} | {one:.0f} | {one - b['p50_us']:.0f} |")
print(json.dumps(out))
PY
