#!/usr/bin/env bash
# bench/run ddp [--quick]: data-parallel training throughput of tune's trainer
# (libtorch + MPI, bucketed gradient allreduce overlapped with backward) next
# to PyTorch DDP over gloo (python3-torch 1.13), on Fashion-MNIST: MLP
# 784-256-128-10 and CNN conv(32)-conv(64)-fc(128), batch 64 per rank, SGD
# momentum, one intra-op thread per rank, 1 and 2 ranks, and two independent
# 1-rank runs side by side (the ceiling for 2 ranks here).
#
# A noisy box: the runs are interleaved in ROUNDS rounds (default 5; each round
# runs every configuration once, back to back), each ratio (tune/peer, 2 ranks
# over 1) is taken within a round, and the table gives the median over rounds
# with the spread (min-max). Figures: bench/ddp/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --rounds=*) ROUNDS="${arg#--rounds=}" ;;
    *) echo "bench/run ddp: unknown option '$arg' (options: --quick, --rounds=N)" >&2; exit 2 ;;
  esac
done
MLP_STEPS=3000 CNN_STEPS=300 ROUNDS="${ROUNDS:-5}"
if [[ $QUICK == 1 ]]; then MLP_STEPS=60 CNN_STEPS=10 ROUNDS=1; fi
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]?$ ]]; then
  echo "bench/run ddp: --rounds takes 1 to 99, got '$ROUNDS'" >&2
  exit 2
fi

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

ROUND=0
tag() { sed "s/^{/{\"round\": $ROUND, /"; }  # the round, into a JSON line
run() {  # run COMMAND...: appends its last stdout line (JSON, with the round) to $RUNS
  note "$*"
  local out
  if ! out="$("$@" 2>"$SCRATCH/stderr")"; then
    cat "$SCRATCH/stderr" >&2
    echo "bench: failed: $*" >&2
    exit 1
  fi
  tail -n 1 <<<"$out" | tag >>"$RUNS"
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
  "$PYTHON" -c 'import json,sys; a,b=(json.loads(open(f).read().splitlines()[-1]) for f in sys.argv[1:3]); a.update(impl="tune_pair", ranks=2, samples_per_s=a["samples_per_s"]+b["samples_per_s"]); print(json.dumps(a))' "$a" "$b" | tag >>"$RUNS"
}

# One OpenMP thread per rank on both sides, as torchrun sets it (mp.spawn does
# not): the OpenMP OpenBLAS otherwise starts one thread per core in threads
# torch.set_num_threads never touched.
export OMP_NUM_THREADS=1
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
HAVE_PEER=1
"$PYTHON" -c "import torch" 2>/dev/null || { HAVE_PEER=0; note "torch is not importable by $PYTHON: peer skipped (apt-get install python3-torch)"; }
for ROUND in $(seq "$ROUNDS"); do
  note "round $ROUND of $ROUNDS"
  for model in mlp cnn; do
    steps=$MLP_STEPS; [[ $model == cnn ]] && steps=$CNN_STEPS
    for ranks in 1 2; do
      # Odd rounds run tune first, even rounds the peer first: a box that slows down or speeds
      # up within a round does not favour one side.
      if ((ROUND % 2 == 0)) && [[ $HAVE_PEER == 1 ]]; then
        run "$PYTHON" "$PEER" --model "$model" --ranks "$ranks" --steps "$steps" --warmup 10
      fi
      run "${MPIRUN[@]}" -np "$ranks" "$BIN" --model "$model" --steps "$steps" --warmup 10
      if ((ROUND % 2 == 1)) && [[ $HAVE_PEER == 1 ]]; then
        run "$PYTHON" "$PEER" --model "$model" --ranks "$ranks" --steps "$steps" --warmup 10
      fi
    done
    run "${MPIRUN[@]}" -np 2 "$BIN" --model "$model" --steps "$steps" --warmup 10 --mpi-allreduce
    pair "$model" "$steps"
  done
done

"$PYTHON" - "$RUNS" "$QUICK" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" "$ROUNDS" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
quick, load0, load1, rounds = sys.argv[2] == "1", sys.argv[3], sys.argv[4], int(sys.argv[5])
# The library tune's runs loaded (blas_library()); the peer's libtorch resolves
# the same libblas.so.3 alternative.
blas = next((r["blas"] for r in runs if r.get("blas")), "unknown")
def one(impl, model, ranks, rnd, shm=True):
    for r in runs:
        if (r["round"] == rnd and r["impl"] == impl and r["model"] == model and r["ranks"] == ranks
                and (ranks == 1 or impl == "tune_pair" or r.get("shared_memory", True) == shm)):
            return r
    return None
def series(impl, model, ranks, key="samples_per_s", shm=True):
    xs = [one(impl, model, ranks, k, shm) for k in range(1, rounds + 1)]
    return [x[key] for x in xs if x]
def ratios(a, b):  # per round a/b, both from the same round
    return [x / y for x, y in zip(a, b) if y]
def stat(xs):  # median, min, max (None when empty)
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None
def fmt(st, spec=",.0f"):
    if not st: return "-"
    if st["n"] == 1: return format(st["median"], spec)
    return f"{format(st['median'], spec)} ({format(st['min'], spec)}-{format(st['max'], spec)})"
summary = {"benchmark": "ddp", "quick": quick, "rounds": rounds, "statistic": "median over rounds",
           "load_start": load0, "load_end": load1, "blas": blas, "models": {}}
print(f"median over {rounds} interleaved round(s), (min-max) over the rounds; ratios taken within each round")
print(f"{'model':5} {'ranks':>5} {'tune samples/s':>26} {'peer samples/s':>26} {'tune/peer':>18} "
      f"{'allreduce ms/step':>18} {'exposed ms/step':>16}")
for model in ("mlp", "cnn"):
    m = {}
    for ranks in (1, 2):
        t, p = series("tune", model, ranks), series("torch_ddp_gloo", model, ranks)
        if not t: continue
        ar = stat(series("tune", model, ranks, "allreduce_ms"))
        ex = stat(series("tune", model, ranks, "exposed_ms"))
        st = stat(series("tune", model, ranks, "step_ms"))
        ratio = stat(ratios(t, p)) if p else None
        m[str(ranks)] = {"tune": statistics.median(t), "peer": statistics.median(p) if p else None,
                         "ratio": ratio["median"] if ratio else None, "tune_spread": stat(t),
                         "peer_spread": stat(p), "ratio_spread": ratio, "allreduce_ms": ar["median"],
                         "exposed_ms": ex["median"], "step_ms": st["median"]}
        print(f"{model:5} {ranks:>5} {fmt(stat(t)):>26} {fmt(stat(p)):>26} {fmt(ratio, '.2f'):>18} "
              f"{ar['median']:>18.3f} {ex['median']:>16.3f}")
    no = series("tune", model, 2, shm=False)
    if no:
        ar = statistics.median(series("tune", model, 2, "allreduce_ms", shm=False))
        ex = statistics.median(series("tune", model, 2, "exposed_ms", shm=False))
        m["2_mpi_iallreduce"] = {"tune": statistics.median(no), "tune_spread": stat(no),
                                 "allreduce_ms": ar, "exposed_ms": ex}
        print(f"{model:5} {'2*':>5} {fmt(stat(no)):>26} {'':>26} {'':>18} {ar:>18.3f} {ex:>16.3f}"
              "   (* MPI_Iallreduce overlapped with backward instead of shared memory)")
    two = series("tune_pair", model, 2)
    if two:
        m["independent_pair"] = statistics.median(two)
        m["independent_pair_spread"] = stat(two)
        print(f"{model:5} {'2x1':>5} {fmt(stat(two)):>26}   (two independent 1-rank runs side by side, "
              "no communication: the ceiling for 2 ranks here)")
    if "1" in m and "2" in m:
        t1, t2 = series("tune", model, 1), series("tune", model, 2)
        sc = stat(ratios(t2, t1))
        m["tune_scaling_2_over_1"], m["tune_scaling_spread"] = sc["median"], sc
        line = f"{model:5} scaling 2/1 ranks: tune {fmt(sc, '.2f')}"
        p1, p2 = series("torch_ddp_gloo", model, 1), series("torch_ddp_gloo", model, 2)
        if p1 and p2:
            psc = stat(ratios(p2, p1))
            m["peer_scaling_2_over_1"], m["peer_scaling_spread"] = psc["median"], psc
            line += f", peer {fmt(psc, '.2f')}"
        if two:
            pair = stat(ratios(two, t1))
            of_pair = stat(ratios(t2, two))
            m["pair_scaling_2_over_1"], m["tune_2_over_pair"] = pair["median"], of_pair["median"]
            line += f", independent pair {fmt(pair, '.2f')} (tune 2 ranks = {fmt(of_pair, '.2f')} of it)"
        print(line)
    summary["models"][model] = m
print(f"load average at start {load0}, at end {load1} (2 shared cores: other work skews figures); BLAS {blas} (both sides)")
print(json.dumps(summary))
PY
