#!/usr/bin/env bash
# bench/run schedulers [--quick]: scheduler cost on a simulated cluster (fake
# clock: 10,000 trials of synthetic curves on 64 workers; ASHA stopping and
# promotion, HyperBand, PBT) and the same ASHA settings as Optuna 3.1's
# SuccessiveHalvingPruner on the same curves. Figures: bench/schedulers/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

TRIALS=10000 SHA_TRIALS=300
for arg in "$@"; do
  case "$arg" in
    --quick) TRIALS=1000 SHA_TRIALS=50 ;;
    *) echo "bench/run schedulers: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done

bench_build bench_schedulers
BIN="$BUILD_DIR/bench/scheduler_bench"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-schedulers-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

note "load average $(cut -d' ' -f1-3 /proc/loadavg)"
note "scale: $TRIALS trials on 64 simulated workers, max_t 81, rf 3"
"$BIN" scale --trials "$TRIALS" --workers 64 --max-t 81 --rf 3 >"$SCRATCH/scale.jsonl"
note "sha: $SHA_TRIALS sequential trials, max_t 27, rf 3"
"$BIN" sha --trials "$SHA_TRIALS" --max-t 27 --rf 3 --curves "$SCRATCH/curves.json" >"$SCRATCH/tune_sha.json"
if "$PYTHON" -c "import optuna" 2>/dev/null; then
  "$PYTHON" "$ROOT/bench/peers/optuna_sha.py" "$SCRATCH/curves.json" 3 >"$SCRATCH/optuna_sha.json"
else
  note "optuna is not importable by $PYTHON: the peer is skipped (apt-get install python3-optuna)"
  echo '{}' >"$SCRATCH/optuna_sha.json"
fi

"$PYTHON" - "$SCRATCH" <<'PY'
import json, sys, os
d = sys.argv[1]
scale = [json.loads(l) for l in open(os.path.join(d, "scale.jsonl"))]
print("Scheduler cost, simulated cluster (fake clock, 64 workers, synthetic curves, max_t 81, rf 3)")
print(f"{'scheduler':<30}{'trials':>8}{'decisions':>11}{'us/decision':>13}{'decisions/s':>13}{'utilisation':>13}{'until last start':>18}{'steps':>10}{'makespan':>10}")
for r in scale:
    name = r["scheduler"] + (" promotion" if r["params"].get("promotion") else (" stopping" if r["scheduler"] == "asha" else ""))
    if r["scheduler"] == "asha":
        name += "" if r["params"].get("backfill", True) else " (no backfill)"
    print(f"{name:<30}{r['trials']:>8}{r['decisions']:>11}{r['us_per_decision']:>13.2f}{r['decisions_per_s']:>13,.0f}{r['utilization']:>12.1%}{r['utilization_until_last_start']:>17.1%}{r['steps']:>10}{r['makespan']:>10.0f}")
t = json.load(open(os.path.join(d, "tune_sha.json")))
o = json.load(open(os.path.join(d, "optuna_sha.json")))
summary = {"scale": scale, "sha_tune": {k: t[k] for k in ("us_per_decision", "decisions")}}
print()
print("ASHA (rf 3, grace 1, max_t 27) vs Optuna 3.1 SuccessiveHalvingPruner (min_resource 1, rf 3), same curves, sequential")
if o.get("stops"):
    ts, os_ = t["stops"], o["stops"]
    n = len(ts)
    same = sum(a == b for a, b in zip(ts, os_))
    both_full = sum(a == 27 and b == 27 for a, b in zip(ts, os_))
    print(f"{'':<28}{'tune asha':>12}{'optuna sha':>12}")
    print(f"{'trials reaching max_t':<28}{sum(a == 27 for a in ts):>12}{sum(b == 27 for b in os_):>12}")
    print(f"{'total steps trained':<28}{sum(ts):>12}{sum(os_):>12}")
    print(f"{'us per decision':<28}{t['us_per_decision']:>12.2f}{o['us_per_decision']:>12.1f}")
    print(f"same stop step: {same}/{n} trials ({same / n:.0%}); reaching max_t in both: {both_full}")
    print(f"decision time ratio (optuna / tune): {o['us_per_decision'] / t['us_per_decision']:.0f}x")
    summary["sha_optuna"] = {k: o[k] for k in ("us_per_decision", "decisions")}
    summary["sha_agreement"] = same / n
    summary["sha_full"] = [sum(a == 27 for a in ts), sum(b == 27 for b in os_)]
print(json.dumps(summary))
PY
