#!/usr/bin/env bash
# bench/schedulers/time_to_accuracy.sh [--quick]: ASHA vs FIFO on Fashion-MNIST
# (the trainer's `fashion_mlp`, 1 rank per trial, 2 slots), the same random
# configs (same seed) and the same max epochs. Reports the wall time until each
# run first reaches FIFO's best validation accuracy (and 99 % of it), and the ratio.
# Needs `apt-get install dataset-fashion-mnist`. Takes ~10 minutes on 2 cores.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
TRIALS=${TTA_TRIALS:-16} EPOCHS=${TTA_EPOCHS:-9} SUBSET=${TTA_SUBSET:-3000}
[[ "${1:-}" == "--quick" ]] && TRIALS=4 EPOCHS=3 SUBSET=1000
bench_build tune_cli
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-tta-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
for scheduler in fifo asha asha_promotion; do
  block="{type: fifo}"
  [[ $scheduler == asha ]] && block="{type: asha, max_t: $EPOCHS, grace_period: 1, reduction_factor: 3}"
  [[ $scheduler == asha_promotion ]] && block="{type: asha, max_t: $EPOCHS, grace_period: 1, reduction_factor: 3, promotion: true}"
  cat >"$SCRATCH/$scheduler.yaml" <<YAML
name: tta-$scheduler
trainable: fashion_mlp
metric: val_accuracy
mode: max
num_samples: $TRIALS
search: {algorithm: random, seed: 1}
scheduler: $block
stop: {training_iteration: $EPOCHS}
param_space:
  optimizer: {choice: [sgd, adam]}
  lr: {loguniform: [1.0e-4, 1.0]}
  momentum: {uniform: [0.5, 0.95]}
  batch_size: {choice: [32, 64, 128]}
  width: {choice: [64, 128, 256]}
  dropout: {uniform: [0.0, 0.4]}
  subset: $SUBSET
  val_size: 1000
  epochs: $EPOCHS
YAML
  note "$scheduler: $TRIALS trials x up to $EPOCHS epochs on $SUBSET images"
  "$BUILD_DIR/tune" run "$SCRATCH/$scheduler.yaml" --storage "$SCRATCH/store" --slots 2 --quiet
done
"$PYTHON" - "$SCRATCH/store/tune.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def curve(name):
    start, = db.execute("SELECT created_at FROM experiments WHERE name=?", (name,)).fetchone()
    rows = db.execute("""SELECT r.time, json_extract(r.metrics_json, '$.val_accuracy') FROM results r
                         JOIN trials t ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id
                         WHERE e.name = ? ORDER BY r.time""", (name,)).fetchall()
    return [(t - start, a) for t, a in rows], max(t for t, _ in rows) - start
fifo, fifo_wall = curve("tta-fifo")
target = max(a for _, a in fifo)
def first(c, level):
    return next((t for t, a in c if a >= level), None)
out = {"fifo_best": target, "fifo_wall_s": fifo_wall, "epochs_fifo": len(fifo)}
print(f"{'':<34}{'FIFO':>10}{'ASHA':>10}{'ratio':>8}{'ASHA prom.':>12}{'ratio':>8}")
runs = {k: curve("tta-" + k) for k in ("asha", "asha_promotion")}
def row(label, f, values, fmt):
    line = f"{label:<34}{fmt(f):>10}"
    for v in values:
        line += (f"{fmt(v):>10}{f / v:>7.1f}x" if v else f"{'never':>10}{'':>8}") if len(line) < 60 else (f"{fmt(v):>12}{f / v:>7.1f}x" if v else f"{'never':>12}")
    print(line)
print(f"{'best val accuracy':<34}{target:>10.4f}" + "".join(f"{max(a for _, a in c):>10.4f}{'':>8}" if k == "asha" else f"{max(a for _, a in c):>12.4f}" for k, (c, _) in runs.items()))
row("epochs trained (all trials)", len(fifo), [len(c) for c, _ in runs.values()], lambda x: f"{x}")
row("wall time of the sweep (s)", fifo_wall, [w for _, w in runs.values()], lambda x: f"{x:.1f}")
for frac in (1.0, 0.99):
    f = first(fifo, frac * target)
    values = [first(c, frac * target) for c, _ in runs.values()]
    out[f"tta_{frac}"] = [f] + values
    row(f"time to {frac:.0%} of FIFO's best (s)", f, values, lambda x: f"{x:.1f}")
for k, (c, w) in runs.items():
    out[k] = {"best": max(a for _, a in c), "wall_s": w, "epochs": len(c)}
print(json.dumps(out))
PY
