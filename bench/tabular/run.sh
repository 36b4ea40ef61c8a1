#!/usr/bin/env bash
# bench/run tabular [--quick]: XGBoost under ASHA vs under FIFO (issue 12):
# the same random configs (same seed) on a generated churn CSV
# (examples/tabular/make_data.py, 40,000 rows), one result per boosting round,
# 2 slots, for SEEDS search seeds (different configs per seed). Reports, per
# seed, the wall time until each run first reaches FIFO's best validation log
# loss (and within 1 % of it), the sweeps' wall times, and the ratios' medians.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
TRIALS=32 ROUNDS=300 ROWS=40000 SEEDS="1 2 3 4 5"
[[ "${1:-}" == "--quick" ]] && TRIALS=8 ROUNDS=60 ROWS=5000 SEEDS=1
bench_build tune_cli
TUNE="$BUILD_DIR/tune"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-tabular-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
"$PYTHON" "$ROOT/examples/tabular/make_data.py" "$SCRATCH" "$ROWS"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
for seed in $SEEDS; do
for scheduler in fifo asha; do
  block="{type: fifo}"
  [[ $scheduler == asha ]] && block="{type: asha, max_t: $ROUNDS, grace_period: 10, reduction_factor: 3}"
  cat >"$SCRATCH/$scheduler.yaml" <<YAML
name: xgb-$scheduler-$seed
trainable: xgboost
metric: val_loss
mode: min
num_samples: $TRIALS
max_concurrent_trials: 2
search: {algorithm: random, seed: $seed}
scheduler: $block
data: {path: churn.csv, label: churn, valid_fraction: 0.25, seed: 2}
preprocess: [{one_hot: [contract, internet, payment_method]}]
param_space:
  eta: {loguniform: [0.005, 0.5]}
  max_depth: {randint: [2, 11]}
  min_child_weight: {loguniform: [0.5, 20]}
  subsample: {uniform: [0.5, 1.0]}
  colsample_bytree: {uniform: [0.5, 1.0]}
  lambda: {loguniform: [0.1, 10]}
  num_boost_round: $ROUNDS
  checkpoint_interval: 10
checkpoint: {num_to_keep: 1}
YAML
  note "seed $seed, $scheduler: $TRIALS trials x up to $ROUNDS rounds on $ROWS rows"
  "$TUNE" run "$SCRATCH/$scheduler.yaml" --storage "$SCRATCH/store" --slots 2 --quiet
done
done
"$PYTHON" - "$SCRATCH/store/tune.db" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" $SEEDS <<'PY'
import json, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
def curve(name):
    start, = db.execute("SELECT created_at FROM experiments WHERE name=?", (name,)).fetchone()
    rows = db.execute("""SELECT r.time, json_extract(r.metrics_json, '$.val_loss') FROM results r
                         JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id
                         WHERE e.name = ? ORDER BY r.time""", (name,)).fetchall()
    return [(t - start, l) for t, l in rows], max(t for t, _ in rows) - start
def first(c, level):
    return next((t for t, l in c if l <= level), None)
fmt = lambda x: "never" if x is None else f"{x:.1f}"
rf = lambda r: "-" if r is None else f"{r:.1f}x"
med = lambda v: statistics.median(v) if v else None
print(f"XGBoost, FIFO vs ASHA, same configs per seed (load {sys.argv[2]} -> {sys.argv[3]}):")
print("| seed | best loss FIFO / ASHA | rounds FIFO / ASHA | sweep s FIFO / ASHA | to FIFO's best s FIFO / ASHA | ratio | to 1 % of it s FIFO / ASHA | ratio |")
print("|---|---|---|---|---|---|---|---|")
out, ratios, ratios_1pct, walls = {}, [], [], []
for seed in sys.argv[4:]:
    (fifo, fw), (asha, aw) = curve(f"xgb-fifo-{seed}"), curve(f"xgb-asha-{seed}")
    best = min(l for _, l in fifo)
    f, a = first(fifo, best), first(asha, best)
    f1, a1 = first(fifo, best * 1.01), first(asha, best * 1.01)
    ratio = f / a if a else None
    ratio1 = f1 / a1 if a1 else None
    if ratio: ratios.append(ratio)
    if ratio1: ratios_1pct.append(ratio1)
    walls.append(fw / aw)
    print(f"| {seed} | {best:.4f} / {min(l for _, l in asha):.4f} | {len(fifo)} / {len(asha)} | {fw:.1f} / {aw:.1f} | "
          f"{fmt(f)} / {fmt(a)} | {rf(ratio)} | {fmt(f1)} / {fmt(a1)} | {rf(ratio1)} |")
    out[seed] = {"fifo_best": best, "asha_best": min(l for _, l in asha), "fifo_rounds": len(fifo),
                 "asha_rounds": len(asha), "fifo_wall_s": fw, "asha_wall_s": aw, "tta_best": [f, a], "tta_1pct": [f1, a1]}
print(f"medians: time to FIFO's best {rf(med(ratios))} (ASHA reached it in {len(ratios)} of {len(walls)} seeds), "
      f"to within 1 % {rf(med(ratios_1pct))}, whole sweep {rf(med(walls))}")
out["median_tta_best_ratio"], out["median_tta_1pct_ratio"], out["median_sweep_ratio"] = med(ratios), med(ratios_1pct), med(walls)
print(json.dumps(out))
PY
