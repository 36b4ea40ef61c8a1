#!/usr/bin/env bash
# bench/run ddp [--quick]: data-parallel training throughput of tune's trainer
# (libtorch + MPI, bucketed gradient allreduce overlapped with backward) next
# to PyTorch DDP over gloo (python3-torch 1.13), on Fashion-MNIST: MLP
# 784-256-128-10 and CNN conv(32)-conv(64)-fc(128), batch 64 per rank, SGD
# momentum, one intra-op thread per rank, 1 and 2 ranks, and two independent
# 1-rank runs side by side (the ceiling for 2 ranks here). Figures: bench/ddp/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "bench/run ddp: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done
MLP_STEPS=3000 CNN_STEPS=300 REPEAT=3
if [[ $QUICK == 1 ]]; then MLP_STEPS=60 CNN_STEPS=10 REPEAT=1; fi

if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz && -z "${TUNE_FASHION_MNIST_DIR:-}" ]]; then
  echo "bench/run ddp: Fashion-MNIST is missing; apt-get install dataset-fashion-mnist" >&2
  exit 1
fi
bench_build bench_ddp
BIN="$BUILD_DIR/bench/ddp_bench"
PEER="$ROOT/bench/peers/torch_ddp.py"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/tune-bench-ddp-XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
RUNS="$SCRATCH/runs.jsonl"
: >"$RUNS"
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
[[ "$(id -u)" == 0 ]] && MPIRUN+=(--allow-run-as-root)

run() {  # run COMMAND...: appends its last stdout line (JSON) to $RUNS
  note "$*"
  local out
  if ! out="$("$@" 2>"$SCRATCH/stderr")"; then
    cat "$SCRATCH/stderr" >&2
    echo "bench: failed: $*" >&2
    exit 1
  fi
  tail -n 1 <<<"$out" >>"$RUNS"
}

# The ceiling for scaling on this machine: two independent 1-rank runs at
# once (no communication at all), their samples/s added.
pair() {  # pair MODEL STEPS
  note "two independent 1-rank runs of $1 side by side"
  local a="$SCRATCH/pair_a" b="$SCRATCH/pair_b"
  "${MPIRUN[@]}" -np 1 "$BIN" --model "$1" --steps "$2" --warmup 10 >"$a" 2>"$SCRATCH/stderr_a" &
  local first=$!
  "${MPIRUN[@]}" -np 1 "$BIN" --model "$1" --steps "$2" --warmup 10 >"$b" 2>"$SCRATCH/stderr_b" || {
    cat "$SCRATCH/stderr_b" >&2; echo "bench: failed: pair $1" >&2; exit 1; }
  wait "$first" || { cat "$SCRATCH/stderr_a" >&2; echo "bench: failed: pair $1" >&2; exit 1; }
  "$PYTHON" -c 'import json,sys; a,b=(json.loads(open(f).read().splitlines()[-1]) for f in sys.argv[1:3]); a.update(impl="tune_pair", ranks=2, samples_per_s=a["samples_per_s"]+b["samples_per_s"]); print(json.dumps(a))' "$a" "$b" >>"$RUNS"
}

# One OpenMP thread per rank on both sides, as torchrun sets it (mp.spawn does
# not): the OpenMP OpenBLAS otherwise starts one thread per core in threads
# torch.set_num_threads never touched.
export OMP_NUM_THREADS=1
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
HAVE_PEER=1
"$PYTHON" -c "import torch" 2>/dev/null || { HAVE_PEER=0; note "torch is not importable by $PYTHON: peer skipped (apt-get install python3-torch)"; }
for i in $(seq "$REPEAT"); do
  for model in mlp cnn; do
    steps=$MLP_STEPS; [[ $model == cnn ]] && steps=$CNN_STEPS
    for ranks in 1 2; do
      run "${MPIRUN[@]}" -np "$ranks" "$BIN" --model "$model" --steps "$steps" --warmup 10
      [[ $HAVE_PEER == 1 ]] && run "$PYTHON" "$PEER" --model "$model" --ranks "$ranks" --steps "$steps" --warmup 10
    done
    run "${MPIRUN[@]}" -np 2 "$BIN" --model "$model" --steps "$steps" --warmup 10 --mpi-allreduce
    pair "$model" "$steps"
  done
done

"$PYTHON" - "$RUNS" "$QUICK" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
quick, load0, load1 = sys.argv[2] == "1", sys.argv[3], sys.argv[4]
# The library tune's runs loaded (blas_library()); the peer's libtorch resolves
# the same libblas.so.3 alternative.
blas = next((r["blas"] for r in runs if r.get("blas")), "unknown")
def best(impl, model, ranks, shm=True):
    rs = [r for r in runs if r["impl"] == impl and r["model"] == model and r["ranks"] == ranks
          and (ranks == 1 or impl == "tune_pair" or r.get("shared_memory", True) == shm)]
    return max(rs, key=lambda r: r["samples_per_s"]) if rs else None
summary = {"benchmark": "ddp", "quick": quick, "load_start": load0, "load_end": load1, "blas": blas, "models": {}}
print(f"{'model':5} {'ranks':>5} {'tune samples/s':>15} {'peer samples/s':>15} {'tune/peer':>9} "
      f"{'allreduce ms/step':>18} {'exposed ms/step':>16}")
for model in ("mlp", "cnn"):
    m = {}
    for ranks in (1, 2):
        t, p = best("tune", model, ranks), best("torch_ddp_gloo", model, ranks)
        if not t: continue
        ratio = t["samples_per_s"] / p["samples_per_s"] if p else None
        m[str(ranks)] = {"tune": t["samples_per_s"], "peer": p["samples_per_s"] if p else None, "ratio": ratio,
                         "allreduce_ms": t["allreduce_ms"], "exposed_ms": t["exposed_ms"], "step_ms": t["step_ms"]}
        print(f"{model:5} {ranks:>5} {t['samples_per_s']:>15,.0f} {(p['samples_per_s'] if p else float('nan')):>15,.0f} "
              f"{(ratio or float('nan')):>9.2f} {t['allreduce_ms']:>18.3f} {t['exposed_ms']:>16.3f}")
    no = best("tune", model, 2, shm=False)
    if no:
        m["2_mpi_iallreduce"] = {"tune": no["samples_per_s"], "allreduce_ms": no["allreduce_ms"],
                                 "exposed_ms": no["exposed_ms"]}
        print(f"{model:5} {'2*':>5} {no['samples_per_s']:>15,.0f} {'':>15} {'':>9} {no['allreduce_ms']:>18.3f} "
              f"{no['exposed_ms']:>16.3f}   (* MPI_Iallreduce overlapped with backward instead of shared memory)")
    two = best("tune_pair", model, 2)
    if two:
        m["independent_pair"] = two["samples_per_s"]
        print(f"{model:5} {'2x1':>5} {two['samples_per_s']:>15,.0f}   (two independent 1-rank runs side by side, "
              "no communication: the ceiling for 2 ranks here)")
    if "1" in m and "2" in m:
        m["tune_scaling_2_over_1"] = m["2"]["tune"] / m["1"]["tune"]
        if two:
            m["pair_scaling_2_over_1"] = two["samples_per_s"] / m["1"]["tune"]
            m["tune_2_over_pair"] = m["2"]["tune"] / two["samples_per_s"]
        if m["1"]["peer"] and m["2"]["peer"]:
            m["peer_scaling_2_over_1"] = m["2"]["peer"] / m["1"]["peer"]
        print(f"{model:5} scaling 2/1 ranks: tune {m['tune_scaling_2_over_1']:.2f}"
              + (f", peer {m['peer_scaling_2_over_1']:.2f}" if "peer_scaling_2_over_1" in m else "")
              + (f", independent pair {m['pair_scaling_2_over_1']:.2f} (tune 2 ranks = {m['tune_2_over_pair']:.2f} of it)"
                 if "pair_scaling_2_over_1" in m else ""))
    summary["models"][model] = m
print(f"load average at start {load0}, at end {load1} (2 shared cores: other work skews figures); BLAS {blas} (both sides)")
print(json.dumps(summary))
PY
