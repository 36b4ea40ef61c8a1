#!/usr/bin/env bash
# bench/run commands [--quick]: what running a program as a trial costs
# (issue 14). Figures and method: bench/README.md ("commands").
#  1. Per-trial overhead: N one-result trials of a program (`sh -c 'echo @tune ...'`,
#     a command trainable), of the in-process `synthetic` trainable, and of Optuna 3.1
#     (SQLite storage, bench/peers/optuna_overhead.py), each one whole process timed
#     (tune's libtorch load and Optuna's import included): trials/s.
#  2. PyTorch DDP: examples/commands/fashion_ddp.py on 2 ranks (gloo), once as a tune
#     trial (resources.workers: 2) and once launched torchrun-style (two processes
#     with torchrun's variables), same config: the script's own samples/s,
#     mean over epochs 2.. (epoch 1 warms up), best of REPEAT runs each.
# Uses build/tune (or TUNE_BENCH_BUILD_DIR/tune): `cmake --build build --target tune_cli`.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
TRIALS=200 EPOCHS=4 SUBSET=12000 REPEAT=2
if [[ "${1:-}" == --quick ]]; then TRIALS=20 EPOCHS=2 SUBSET=2000 REPEAT=1; fi
TUNE="${TUNE_BENCH_BUILD_DIR:-$ROOT/build}/tune"
[[ -x "$TUNE" ]] || { echo "bench/run commands: no $TUNE (cmake --build build --target tune_cli)" >&2; exit 1; }
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-commands-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

cat >"$SCRATCH/command.yaml" <<YAML
name: command
trainable: {command: [sh, -c, 'echo "@tune {{\"loss\": {x}}}"']}  # {{ }}: literal braces
metric: loss
mode: min
num_samples: $TRIALS
search: {seed: 1}
param_space: {x: {uniform: [0, 1]}}
YAML
cat >"$SCRATCH/inprocess.yaml" <<YAML
name: inprocess
trainable: synthetic
metric: loss
mode: min
num_samples: $TRIALS
search: {seed: 1}
param_space: {x: {uniform: [0, 1]}, iterations: 1}
YAML
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>"$SCRATCH/err" || { cat "$SCRATCH/err" >&2; exit 1; }; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
note "overhead: $TRIALS trials each"
CMD_S=$(seconds "$TUNE" run "$SCRATCH/command.yaml" --storage "$SCRATCH/s1" --slots 2 --quiet)
INP_S=$(seconds "$TUNE" run "$SCRATCH/inprocess.yaml" --storage "$SCRATCH/s2" --slots 2 --quiet)
OPT_S=$(seconds "$PYTHON" "$ROOT/bench/peers/optuna_overhead.py" --trials "$TRIALS" --tmp "$SCRATCH")

# DDP: the same script and config under tune and under torchrun.
CONFIG="{\"lr\": 0.05, \"momentum\": 0.9, \"width\": 256, \"batch_size\": 64, \"subset\": $SUBSET, \"epochs\": $EPOCHS}"
cat >"$SCRATCH/ddp.yaml" <<YAML
name: ddp
trainable: {command: [$PYTHON, $ROOT/examples/commands/fashion_ddp.py]}
metric: val_accuracy
mode: max
resources: {workers: 2}
param_space: {lr: 0.05, momentum: 0.9, width: 256, batch_size: 64, subset: $SUBSET, epochs: $EPOCHS}
YAML
rate() {  # mean samples_per_s after epoch 1 in a file of @tune lines
  "$PYTHON" -c 'import json,sys; r=[json.loads(l[6:])["samples_per_s"] for l in open(sys.argv[1]) if l.startswith("@tune ")]; r=r[1:] or r; print(sum(r)/len(r))' "$1"
}
TUNE_RATES=() TORCHRUN_RATES=()
for i in $(seq "$REPEAT"); do
  note "ddp run $i: under tune"
  "$TUNE" run "$SCRATCH/ddp.yaml" --name "ddp$i" --storage "$SCRATCH/s3" --slots 2 --quiet >/dev/null
  TUNE_RATES+=("$(rate "$SCRATCH/s3/ddp$i/trial_00000/stdout.log")")
  note "ddp run $i: torchrun-style launch"
  # What torchrun does for one node: each rank a process with RANK, WORLD_SIZE,
  # LOCAL_RANK, MASTER_ADDR, MASTER_PORT. (Debian's torchrun, torch 1.13.0a0,
  # fails in start_processes: `'NoneType' object has no attribute 'get'`.)
  PORT=$((20000 + RANDOM % 20000))
  for r in 0 1; do
    (cd "$SCRATCH" && TUNE_CONFIG="$CONFIG" RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 \
       MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT "$PYTHON" "$ROOT/examples/commands/fashion_ddp.py" \
       >"$SCRATCH/torchrun$i.$r.out" 2>"$SCRATCH/torchrun$i.$r.err") &
  done
  wait || { cat "$SCRATCH"/torchrun"$i".*.err >&2; exit 1; }
  cp "$SCRATCH/torchrun$i.0.out" "$SCRATCH/torchrun$i.out"
  TORCHRUN_RATES+=("$(rate "$SCRATCH/torchrun$i.out")")
done
"$PYTHON" - "$TRIALS" "$CMD_S" "$INP_S" "$OPT_S" "${TUNE_RATES[*]}" "${TORCHRUN_RATES[*]}" "$LOAD_START" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
trials = int(sys.argv[1]); cmd, inp, opt = map(float, sys.argv[2:5])
tune_rates = [float(x) for x in sys.argv[5].split()]; torchrun_rates = [float(x) for x in sys.argv[6].split()]
rows = [("tune, command trainable (sh per trial)", cmd), ("tune, in-process trainable", inp), ("Optuna 3.1 + SQLite", opt)]
print(f"per-trial overhead, {trials} one-result trials, whole process (load {sys.argv[7]} -> {sys.argv[8]}):")
print(f"| system | wall s | trials/s | ms/trial |\n|---|---|---|---|")
for name, s in rows:
    print(f"| {name} | {s:.2f} | {trials / s:.1f} | {1000 * s / trials:.1f} |")
t, r = max(tune_rates), max(torchrun_rates)
print(f"\nPyTorch DDP, examples/commands/fashion_ddp.py on 2 ranks (best of {len(tune_rates)}):")
print(f"| launcher | samples/s |\n|---|---|\n| tune trial group | {t:.0f} |\n| torchrun-style launch | {r:.0f} |")
print(f"tune / torchrun-style: {t / r:.3f}")
print(json.dumps({"trials": trials, "command_trials_per_s": trials / cmd, "inprocess_trials_per_s": trials / inp,
                  "optuna_trials_per_s": trials / opt, "ddp_tune_samples_per_s": t, "ddp_torchrun_samples_per_s": r,
                  "ddp_ratio": t / r, "tune_runs": tune_rates, "torchrun_runs": torchrun_rates}))
PY
