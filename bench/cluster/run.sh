#!/usr/bin/env bash
# bench/run cluster [--quick]: multi-host execution on two namespace hosts of
# scripts/local-cluster.sh (brought up and down here; needs root):
#   - DDP samples/s of a 2-rank MLP group spanning two hosts vs within one;
#   - checkpoint streaming (tune's protocol: 4 MiB frames, XXH3-128, staging
#     and rename) vs a plain TCP copy of the same bytes over the same path,
#     1 MB, 100 MB and 1 GB, host -> driver;
#   - report-to-ack latency of a real sweep on a remote host, with and without
#     a checkpoint per result;
#   - placement at scale: 1,000 hosts x 64 slots, 100,000 groups of 1-16 ranks.
# Figures: bench/cluster/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "bench/run cluster: unknown option '$arg' (options: --quick)" >&2; exit 2 ;;
  esac
done
[[ "$(id -u)" == 0 ]] || { echo "bench/run cluster: needs root (namespace hosts)" >&2; exit 1; }
SIZES=(1000000 100000000 1000000000) REPEAT=3 STEPS=2000 RESULTS=300 TRIALS=100000
if [[ $QUICK == 1 ]]; then SIZES=(1000000 100000000); REPEAT=1; STEPS=200; RESULTS=60; TRIALS=10000; fi

bench_build bench_cluster
BIN="$BUILD_DIR/bench/cluster_bench"
DDP="$BUILD_DIR/bench/ddp_bench"
TUNE="$BUILD_DIR/tune"
CLUSTER="$ROOT/scripts/local-cluster.sh"
SCRATCH="$(mktemp -d "$BUILD_DIR/cluster-XXXXXX")"  # on disk, not /tmp: the hosts see it
"$CLUSTER" up 2 2>/dev/null
trap '"$CLUSTER" down; rm -rf "$SCRATCH"' EXIT
RUNS="$SCRATCH/runs.jsonl"
: >"$RUNS"
export OMPI_MCA_plm_rsh_agent="$ROOT/scripts/local-cluster-agent.sh" OMP_NUM_THREADS=1
H1=10.77.0.11 H2=10.77.0.12
record() { tail -n 1 <<<"$1" | "$PYTHON" -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(json.loads(sys.argv[1])); print(json.dumps(d))" "$2" >>"$RUNS"; }

note "placement: 1000 hosts x 64 slots, $TRIALS groups"
record "$("$BIN" placement --hosts 1000 --slots 64 --trials "$TRIALS")" '{}'

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none
        --mca oob_tcp_if_include 10.77.0.0/24)
if [[ -x "$DDP" ]]; then
  for i in $(seq "$REPEAT"); do
    note "ddp: MLP, 2 ranks within $H1 / across $H1+$H2 ($STEPS steps)"
    record "$("${MPIRUN[@]}" -np 2 --host $H1:2 --mca btl self,vader "$DDP" --model mlp --steps "$STEPS" --warmup 10 2>/dev/null)" '{"where":"one_host"}'
    record "$("${MPIRUN[@]}" -np 2 --host $H1:2 --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 "$DDP" --model mlp --steps "$STEPS" --warmup 10 --mpi-allreduce 2>/dev/null)" '{"where":"one_host_mpi"}'
    record "$("${MPIRUN[@]}" -np 2 --host $H1:1,$H2:1 --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 "$DDP" --model mlp --steps "$STEPS" --warmup 10 --mpi-allreduce 2>/dev/null)" '{"where":"two_hosts"}'
  done
fi

for size in "${SIZES[@]}"; do
  reps=$REPEAT; [[ $size -ge 1000000000 ]] && reps=$(( REPEAT > 2 ? 2 : REPEAT ))
  for i in $(seq "$reps"); do
    for mode in raw tune; do
      note "stream: $size bytes, $mode"
      rm -f "$SCRATCH/ready"
      "$BIN" receive --address 10.77.0.1 --bytes "$size" --mode "$mode" --dir "$SCRATCH/recv" --ready "$SCRATCH/ready" >"$SCRATCH/recv.out" &
      rpid=$!
      for _ in $(seq 100); do [[ -f "$SCRATCH/ready" ]] && break; sleep 0.05; done
      endpoint="$(sed -n 1p "$SCRATCH/ready")" token="$(sed -n 2p "$SCRATCH/ready")"
      out="$("$CLUSTER" exec $H1 "$BIN" send --endpoint "$endpoint" --token "$token" --bytes "$size" --mode "$mode")"
      wait $rpid
      record "$out" "$(tail -n 1 "$SCRATCH/recv.out")"
    done
  done
done

note "report-to-ack latency: $RESULTS results from a trial on $H1, without and with a checkpoint"
printf '%s slots=1\n' $H1 >"$SCRATCH/hosts"
for ckpt in false true; do
  cat >"$SCRATCH/lat_$ckpt.yaml" <<YAML
name: latency
trainable: synthetic
metric: loss
mode: min
num_samples: 1
param_space: {x: 1.0, iterations: $RESULTS, checkpoint: $ckpt}
checkpoint: {num_to_keep: 2}
YAML
  "$TUNE" run "$SCRATCH/lat_$ckpt.yaml" --storage "$SCRATCH/lat_$ckpt" --hostfile "$SCRATCH/hosts" -q
  record "$("$PYTHON" - "$SCRATCH/lat_$ckpt/tune.db" <<'PY'
import json, sqlite3, sys
t = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT time FROM results ORDER BY id")]
d = sorted(b - a for a, b in zip(t[5:], t[6:]))  # after a warm-up of 5
print(json.dumps({"bench": "latency", "results": len(t), "median_ms": 1e3 * d[len(d) // 2],
                  "p99_ms": 1e3 * d[int(0.99 * (len(d) - 1))]}))
PY
)" "{\"checkpoint\": $ckpt}"
done

"$PYTHON" - "$RUNS" "$QUICK" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = {"benchmark": "cluster", "quick": sys.argv[2] == "1"}
p = next(r for r in runs if r.get("bench") == "placement")
out["placement"] = p
print(f"placement: {p['hosts']} hosts x {p['slots_per_host']} slots, {p['trials']:,} groups of 1-16 ranks: "
      f"{p['mean_us']:.2f} us mean, {p['p50_us']:.2f} p50, {p['p99_us']:.2f} p99 per decision; max RSS {p['max_rss_mb']:.1f} MB")
ddp = {}
for where in ("one_host", "one_host_mpi", "two_hosts"):
    rs = [r["samples_per_s"] for r in runs if r.get("where") == where]
    if rs: ddp[where] = max(rs)
if ddp:
    out["ddp_mlp_samples_per_s"] = ddp
    line = ", ".join(f"{k} {v:,.0f}" for k, v in ddp.items())
    if "two_hosts" in ddp and "one_host" in ddp:
        out["ddp_two_over_one"] = ddp["two_hosts"] / ddp["one_host"]
        line += f"; two hosts / one host {out['ddp_two_over_one']:.2f}"
    print("DDP MLP, 2 ranks, samples/s (best of runs): " + line)
print(f"{'checkpoint':>11} {'plain TCP MB/s':>15} {'tune MB/s':>10} {'tune/plain':>10}")
stream = {}
streams = [r for r in runs if "send_to_ack_s" in r]  # sender's figures, the receiver's merged in
for size in sorted({r["bytes"] for r in streams}):
    best = {m: max(r["bytes"] / 1e6 / r["send_to_ack_s"] for r in streams if r["bytes"] == size and r["mode"] == m)
            for m in ("raw", "tune")}
    stream[str(size)] = {"plain_mb_s": best["raw"], "tune_mb_s": best["tune"], "ratio": best["tune"] / best["raw"]}
    print(f"{size / 1e6:>9,.0f}MB {best['raw']:>15,.1f} {best['tune']:>10,.1f} {best['tune'] / best['raw']:>10.2f}")
out["stream"] = stream
lat = {str(r["checkpoint"]).lower(): r for r in runs if r.get("bench") == "latency"}
out["report_to_ack_ms"] = {k: {"median": v["median_ms"], "p99": v["p99_ms"]} for k, v in lat.items()}
for k, v in lat.items():
    print(f"report-to-ack ({'with' if k == 'true' else 'without'} a checkpoint): median {v['median_ms']:.2f} ms, p99 {v['p99_ms']:.2f} ms over {v['results']} results")
print(json.dumps(out))
PY
