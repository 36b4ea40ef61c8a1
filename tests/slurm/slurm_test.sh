#!/usr/bin/env bash
# Tests of tune with a real Slurm (scripts/local-slurm.sh up, brought up by
# the ctest fixture first):
#
#   slurm_test.sh TUNE_BINARY CASE     CASE: salloc | dry_run | submit | requeue | bad_sweep | multi_host
#
# salloc     `salloc -N1 -n2 tune run` of a 4-trial sweep of 2-rank MPI groups:
#            every trial TERMINATED, each attempt placed on the allocation's
#            node (not "localhost"), the driver's slots those of the allocation.
# dry_run    `tune submit --dry-run` prints a script that embeds the sweep
#            byte for byte (even a line equal to the heredoc's delimiter,
#            quotes, $ and backslashes), passes bash -n, and submits nothing.
# submit     `tune submit` really submits; the job ends within 120 s, COMPLETED
#            with exit 0, and the store it wrote has every trial TERMINATED on
#            the allocation's node.
# requeue    a submitted job requeued while its sweep runs (scontrol requeue):
#            the first run records it INTERRUPTED, none failed; the job's
#            second run continues it (--resume-if-exists) to every trial
#            TERMINATED from its checkpoints.
# bad_sweep  a bad sweep file (structure, unknown trainable) fails with
#            file:line and exit 2 and submits nothing; a missing sbatch and a
#            failing sbatch give one clear line and exit 1.
# multi_host Slurm over two namespace hosts (local-slurm.sh up --hosts 2):
#            `salloc -N2 -n4 tune run` and `tune submit --nodes 2` of 2-rank
#            groups spread over both nodes, two groups at a time; every
#            attempt ran on tunehost1+tunehost2. Puts the one-node Slurm back.
# Each case prints what it checks and exits non-zero with the reason.
set -euo pipefail
TUNE=${1:?usage: slurm_test.sh TUNE_BINARY CASE}
CASE=${2:?usage: slurm_test.sh TUNE_BINARY CASE}
WORK_BASE=${TUNE_SLURM_WORK:-$PWD/slurm_work}
WORK="$WORK_BASE/$CASE"
export SLURM_CONF=${SLURM_CONF:-/run/tune-slurm/slurm.conf}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }
note() { echo "-- $*"; }

[[ -x $TUNE ]] || fail "no tune binary at $TUNE"
[[ -e $SLURM_CONF ]] || fail "no Slurm config at $SLURM_CONF (scripts/local-slurm.sh up)"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

NODE="$(sinfo -h -N -o %N | head -n 1)"
[[ -n $NODE ]] || fail "sinfo lists no node"

# A tiny sweep: 4 trials of a builtin, each a 2-rank MPI group.
sweep() {  # sweep NAME [EXTRA-LINES]
  cat <<EOF
# A sweep for the Slurm tests: it's 'quoted', has \$HOME, a backslash \\ and "double quotes".
name: $1
trainable: branin
metric: loss
mode: min
num_samples: 4
resources: {workers: 2}
search: {algorithm: random, seed: 3}
stop: {training_iteration: 3}
param_space:
  x0: {uniform: [-5, 10]}
  x1: {uniform: [0, 15]}
  noise: 0.1
${2:-}
EOF
}

# The store's trials all TERMINATED, and every attempt placed on exactly the
# hosts HOSTS ("vm", or "tunehost1,tunehost2": sorted, comma-separated;
# default the one node $NODE), as `tune trials --json` says (read with
# sqlite3's JSON functions).
check_trials() {  # check_trials STORAGE EXPERIMENT [HOSTS]
  local want=${3:-$NODE} rows bad
  "$TUNE" trials "$2" --json --storage "$1" >trials.json || fail "tune trials $2 failed"
  rows="$(sqlite3 -batch :memory: "SELECT json_extract(t.value, '\$.trial_name'), json_extract(t.value, '\$.status'),
      json_extract(t.value, '\$.attempts'),
      (SELECT group_concat(a.hosts, ' ') FROM (SELECT (SELECT group_concat(h, ',') FROM
          (SELECT DISTINCT h.value AS h FROM json_each(p.value, '\$.hosts') h ORDER BY 1)) AS hosts
        FROM json_each(t.value, '\$.placements') p) a)
    FROM json_each(readfile('trials.json')) t")"
  sed 's/^/   trial|status|attempts|hosts of each attempt: /' <<<"$rows"
  [[ $(wc -l <<<"$rows") == 4 ]] || fail "$2 has not 4 trials"
  bad="$(awk -F'|' -v want="$want" '{ n = split($4, a, " "); ok = $2 == "TERMINATED" && n > 0
    for (i = 1; i <= n; i++) ok = ok && a[i] == want; if (!ok) print $1 }' <<<"$rows")"
  [[ -z $bad ]] || fail "trials not TERMINATED on exactly $want: $bad"
}

# The `started` event's slots.
started_slots() {  # started_slots STORAGE
  sqlite3 "$1/tune.db" "SELECT json_extract(detail_json, '$.slots') FROM events WHERE kind = 'started' ORDER BY id LIMIT 1"
}

# Runs a command for at most SECONDS; past that, it and every process under
# it (salloc puts its command in a process group of its own, tune its mpirun
# in another) get SIGTERM, then SIGKILL. Returns the command's status, 124
# when it ran out of time.
bounded() {  # bounded SECONDS COMMAND...
  local seconds=$1; shift
  "$@" &
  local pid=$! deadline=$((SECONDS + seconds))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    local tree
    tree="$(descendants "$pid")"
    # shellcheck disable=SC2086
    kill -TERM $tree 2>/dev/null || true
    sleep 5
    # shellcheck disable=SC2086
    kill -KILL $tree 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 124
  fi
  wait "$pid"
}

descendants() {  # descendants PID: PID and everything under it
  ps -eo pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      keep[root] = 1; changed = 1
      while (changed) { changed = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
      for (p in keep) print p
    }'
}

jobs_known() { squeue -h -t all -o %i | sort -n | tr '\n' ' '; }

case $CASE in
  salloc)
    sweep slurm-salloc >sweep.yaml
    note "salloc -N1 -n2 tune run sweep.yaml (node $NODE)"
    bounded 150 salloc -N1 -n2 --job-name=tune-salloc-test "$TUNE" run sweep.yaml --storage "$WORK/store" -q \
      >run.log 2>&1 || { tail -n 40 run.log >&2; fail "salloc ... tune run failed or ran over 150 s (log above)"; }
    check_trials "$WORK/store" slurm-salloc
    slots="$(started_slots "$WORK/store")"
    note "the driver's slots: $slots (salloc -n2)"
    [[ $slots == 2 ]] || fail "the driver ran with $slots slots, not the allocation's 2"
    # Outside an allocation the same sweep places on "localhost": the node
    # name above came from Slurm.
    ;;

  dry_run)
    # A constant whose quoted value spans three lines, the second equal to
    # the heredoc delimiter the script would pick first.
    sweep slurm-dry '  note: "three lines,
TUNE_SWEEP_EOF
    the end"' >sweep.yaml
    grep -qx TUNE_SWEEP_EOF sweep.yaml || fail "the test sweep lacks its delimiter line"
    "$TUNE" submit sweep.yaml --dry-run >/dev/null 2>err.txt || { cat err.txt >&2; fail "the sweep itself is refused"; }
    before="$(jobs_known)"
    "$TUNE" submit sweep.yaml --dry-run --nodes 1 --time 5 --partition debug --storage rel/store \
      --output "$WORK/job-%j.log" -- --comment=dry >script.sh 2>err.txt || { cat err.txt >&2; fail "tune submit --dry-run failed"; }
    note "the script:"; sed 's/^/   | /' script.sh
    bash -n script.sh || fail "the script is not valid bash"
    head -n 1 script.sh | grep -qx '#!/bin/bash' || fail "no #!/bin/bash first line"
    for line in '#SBATCH --nodes=1' '#SBATCH --time=5' '#SBATCH --partition=debug' '#SBATCH --job-name=slurm-dry' \
      "#SBATCH --output=$WORK/job-%j.log" '#SBATCH --exclusive'; do
      grep -qxF -- "$line" script.sh || fail "no '$line' line"
    done
    grep -qF -- "'--comment=dry'" script.sh || fail "the pass-through sbatch argument is not recorded"
    grep -qF -- "--storage '$WORK/rel/store' --resume-if-exists '--relative-to' '$WORK'" script.sh ||
      fail "no --storage made absolute, --resume-if-exists and --relative-to the file's folder"
    grep -qF -- "tune_binary='$(readlink -f "$TUNE")'" script.sh || fail "the tune binary's absolute path is not in the script"
    # The heredoc holds the file byte for byte: run the script's own heredoc.
    delimiter="$(sed -n "s/^cat >\"\$tune_sweep_dir\/sweep.yaml\" <<'\(.*\)'$/\1/p" script.sh)"
    [[ -n $delimiter ]] || fail "no quoted heredoc in the script"
    grep -qx "$delimiter" sweep.yaml && fail "the delimiter '$delimiter' is a line of the sweep"
    awk -v d="$delimiter" 'found && $0 == d { exit } found { print } index($0, "<<'\''" d "'\''") { found = 1 }' \
      script.sh >embedded.yaml
    cmp sweep.yaml embedded.yaml || fail "the embedded sweep differs from the file"
    after="$(jobs_known)"
    [[ $before == "$after" ]] || fail "--dry-run submitted a job (jobs before: '$before', after: '$after')"
    note "embedded byte for byte (heredoc delimiter $delimiter), nothing submitted"
    ;;

  submit)
    sweep slurm-submit >sweep.yaml
    out="$("$TUNE" submit sweep.yaml --nodes 1 --time 5 --storage store --output "$WORK/job-%j.log" 2>&1)" ||
      fail "tune submit failed: $out"
    echo "$out" | sed 's/^/   | /'
    id="$(sed -n 's/^submitted batch job \([0-9][0-9]*\)$/\1/p' <<<"$out")"
    [[ -n $id ]] || fail "no 'submitted batch job ID' line"
    grep -qF "squeue -j $id" <<<"$out" || fail "no 'squeue -j $id' hint"
    grep -qF "$WORK/job-$id.log" <<<"$out" || fail "the log path is not printed"
    grep -qF "tune status slurm-submit --storage $WORK/store" <<<"$out" || fail "no 'tune status' hint"
    deadline=$((SECONDS + 120))
    while [[ -n "$(squeue -h -j "$id" -o %T 2>/dev/null)" ]]; do
      ((SECONDS < deadline)) || { scancel "$id"; cat "$WORK/job-$id.log" >&2 || true; fail "job $id still queued or running after 120 s"; }
      sleep 1
    done
    state="$(scontrol show job "$id" | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*' | tr '\n' ' ')"
    note "job $id ended: $state"
    [[ $state == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || { cat "$WORK/job-$id.log" >&2 || true; fail "job $id did not complete with exit 0"; }
    [[ -s $WORK/job-$id.log ]] || fail "no job log at $WORK/job-$id.log"
    grep -q "experiment slurm-submit: 4 terminated" "$WORK/job-$id.log" || { cat "$WORK/job-$id.log" >&2; fail "the job log does not show the sweep's end"; }
    check_trials "$WORK/store" slurm-submit
    # --exclusive: the job had the whole node.
    slots="$(started_slots "$WORK/store")"
    cpus="$(sinfo -h -N -o %c | head -n 1)"
    note "the driver's slots: $slots (the node's CPUs: $cpus)"
    [[ $slots == "$cpus" ]] || fail "the job's driver had $slots slots, not the node's $cpus"
    ;;

  requeue)
    # A job requeued while its sweep runs (a preemption, a node failure; here
    # `scontrol requeue`): Slurm sends SIGTERM to every process of the job,
    # then runs the job again. The first run records the sweep INTERRUPTED
    # within KillWait, no trial counted failed (max_failures 0); the second's
    # `tune run --resume-if-exists` continues it from the checkpoints.
    cat >sweep.yaml <<SWEEP
name: slurm-requeue
trainable: synthetic
metric: loss
mode: min
num_samples: 4
resources: {workers: 2}
failure: {max_failures: 0}
search: {algorithm: random, seed: 3}
param_space:
  x: {uniform: [0.1, 3.0]}
  iterations: 12
  checkpoint: true
  sleep_s: 0.25
SWEEP
    out="$("$TUNE" submit sweep.yaml --nodes 1 --storage store --output "$WORK/job-%j.log" -- --requeue \
      --open-mode=append 2>&1)" || fail "tune submit failed: $out"
    id="$(sed -n 's/^submitted batch job \([0-9][0-9]*\)$/\1/p' <<<"$out")"
    [[ -n $id ]] || fail "no 'submitted batch job ID' line: $out"
    results() { sqlite3 "$WORK/store/tune.db" "SELECT COUNT(*) FROM results" 2>/dev/null || echo 0; }
    deadline=$((SECONDS + 90))
    until (($(results) >= 6)); do
      ((SECONDS < deadline)) || { scancel "$id"; cat "$WORK/job-$id.log" >&2 || true; fail "no 6 results within 90 s"; }
      sleep 0.2
    done
    note "job $id: $(results) results stored; scontrol requeue $id"
    scontrol requeue "$id" || fail "scontrol requeue $id failed"
    # Slurm holds a requeued job for AuthInfo's cred_expire (120 s by default;
    # 30 s in scripts/local-slurm.sh's slurm.conf) before it runs again.
    deadline=$((SECONDS + 150))
    while [[ "$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*')" != JobState=COMPLETED ]]; do
      state="$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*\|Restarts=[0-9]*' | tr '\n' ' ')"
      [[ $state == *JobState=FAILED* || $state == *JobState=CANCELLED* ]] && { cat "$WORK/job-$id.log" >&2 || true; fail "job $id ended $state"; }
      ((SECONDS < deadline)) || { scancel "$id"; cat "$WORK/job-$id.log" >&2 || true; fail "job $id not COMPLETED within 150 s of the requeue ($state)"; }
      sleep 1
    done
    state="$(scontrol show job "$id" | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*\|Restarts=[0-9]*' | tr '\n' ' ')"
    note "job $id ended: $state"
    [[ $state == *"Restarts=1"* && $state == *"ExitCode=0:0"* ]] || { cat "$WORK/job-$id.log" >&2; fail "job $id: $state"; }
    note "its log (both runs):"; grep '^tune' "$WORK/job-$id.log" | sed 's/^/   | /'
    grep -q "^tune: interrupted" "$WORK/job-$id.log" || fail "the first run did not record the interruption"
    grep -qF "tune: experiment 'slurm-requeue' exists in $WORK/store (INTERRUPTED): continuing it" "$WORK/job-$id.log" ||
      fail "the second run did not continue the INTERRUPTED experiment"
    grep -q "experiment slurm-requeue: 4 terminated, 0 errored" "$WORK/job-$id.log" || fail "the sweep did not finish"
    check_trials "$WORK/store" slurm-requeue
    # Continued from checkpoints, not restarted: the state is x per iteration.
    bad="$(sqlite3 -batch :memory: "SELECT json_extract(t.value, '\$.trial_name') FROM json_each(readfile('trials.json')) t
      WHERE abs(json_extract(t.value, '\$.last_result.state') - 12 * json_extract(t.value, '\$.config.x')) > 1e-9
         OR json_extract(t.value, '\$.iteration') != 12")"
    [[ -z $bad ]] || fail "trials not at iteration 12 with state 12 x: $bad"
    ;;

  bad_sweep)
    before="$(jobs_known)"
    sweep slurm-bad >bad.yaml
    sed -i 's/^num_samples: 4$/num_sample: 4/' bad.yaml
    line="$(grep -n '^num_sample:' bad.yaml | cut -d: -f1)"
    set +e
    "$TUNE" submit bad.yaml --nodes 1 >out.txt 2>err.txt
    rc=$?
    set -e
    note "a misspelt key: exit $rc: $(cat err.txt)"
    [[ $rc == 2 ]] || fail "exit $rc, not 2"
    grep -qF "bad.yaml:$line:" err.txt || fail "the error does not name bad.yaml:$line"
    [[ $(wc -l <err.txt) == 1 ]] || fail "the error is not one line"

    sweep slurm-bad >bad2.yaml
    sed -i 's/^trainable: branin$/trainable: brannin/' bad2.yaml
    line="$(grep -n '^trainable:' bad2.yaml | cut -d: -f1)"
    set +e
    "$TUNE" submit bad2.yaml >out.txt 2>err.txt
    rc=$?
    set -e
    note "an unknown trainable: exit $rc: $(cat err.txt)"
    [[ $rc == 2 ]] || fail "exit $rc, not 2"
    grep -qF "bad2.yaml:$line:" err.txt || fail "the error does not name bad2.yaml:$line"
    grep -qF "branin" err.txt || fail "no did-you-mean"

    after="$(jobs_known)"
    [[ $before == "$after" ]] || fail "a bad sweep submitted a job (jobs before: '$before', after: '$after')"
    [[ -z "$(squeue -h)" ]] || fail "squeue is not empty: $(squeue -h)"

    sweep slurm-good >good.yaml
    set +e
    PATH=/nonexistent "$TUNE" submit good.yaml >out.txt 2>err.txt
    rc=$?
    set -e
    note "no sbatch in PATH: exit $rc: $(cat err.txt)"
    [[ $rc == 1 ]] || fail "exit $rc, not 1"
    grep -q "sbatch not found" err.txt || fail "no 'sbatch not found'"

    set +e
    "$TUNE" submit good.yaml --partition no-such-partition >out.txt 2>err.txt
    rc=$?
    set -e
    note "sbatch refuses: exit $rc: $(cat err.txt)"
    [[ $rc == 1 ]] || fail "exit $rc, not 1"
    grep -q "sbatch failed.*[Ii]nvalid partition" err.txt || fail "sbatch's own error is not shown"
    [[ $(wc -l <err.txt) == 1 ]] || fail "the error is not one line"
    after="$(jobs_known)"
    [[ $before == "$after" ]] || fail "jobs appeared (before: '$before', after: '$after')"
    ;;

  multi_host)
    # Slurm with two nodes, each a test host of scripts/local-cluster.sh
    # (own network namespace and hostname): the fixture's one-node Slurm is
    # replaced for this case and put back after it.
    slurm_script="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/local-slurm.sh"
    trap '"$slurm_script" up >/dev/null 2>&1 || echo "FAIL ($CASE): could not restore the one-node Slurm" >&2' EXIT
    "$slurm_script" up --hosts 2 >up.log 2>&1 || { cat up.log >&2; fail "local-slurm.sh up --hosts 2 failed"; }
    nodes="$(sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')"
    note "nodes: $nodes"
    [[ $nodes == "tunehost1 idle tunehost2 idle " ]] || fail "the nodes are not tunehost1 and tunehost2, idle"
    # Each trial a 2-rank group spread over both nodes, two groups at once.
    sweep slurm-multi >sweep.yaml
    sed -i 's/^resources: {workers: 2}$/resources: {workers: 2, placement: spread}/' sweep.yaml
    # The driver runs here, outside the hosts; the nodes' names do not
    # resolve here, so it is told its interface toward them.
    note "salloc -N2 -n4 tune run sweep.yaml --network-interface tunebr0"
    bounded 100 salloc -N2 -n4 --job-name=tune-salloc-multi "$TUNE" run sweep.yaml --storage "$WORK/store" -q \
      --network-interface tunebr0 >run.log 2>&1 || { tail -n 40 run.log "$WORK"/store/*/logs/* >&2; fail "salloc -N2 ... tune run failed or ran over 100 s (log above)"; }
    check_trials "$WORK/store" slurm-multi tunehost1,tunehost2
    # A batch job: its driver runs on tunehost1 (reaching tunehost2 over eth0).
    sweep slurm-multi-batch >batch.yaml
    sed -i 's/^resources: {workers: 2}$/resources: {workers: 2, placement: spread}/' batch.yaml
    out="$("$TUNE" submit batch.yaml --nodes 2 --time 3 --storage batch-store --output "$WORK/job-%j.log" \
      --network-interface eth0 2>&1)" || fail "tune submit failed: $out"
    id="$(sed -n 's/^submitted batch job \([0-9][0-9]*\)$/\1/p' <<<"$out")"
    [[ -n $id ]] || fail "no job id: $out"
    deadline=$((SECONDS + 90))
    while [[ -n "$(squeue -h -j "$id" -o %T 2>/dev/null)" ]]; do
      ((SECONDS < deadline)) || { scancel "$id"; sleep 2; tail -n 30 "$WORK/job-$id.log" >&2 || true; fail "job $id still queued or running after 90 s"; }
      sleep 1
    done
    state="$(scontrol show job "$id" | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*\|BatchHost=[a-z0-9]*' | tr '\n' ' ')"
    note "job $id ended: $state"
    [[ $state == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || { cat "$WORK/job-$id.log" >&2 || true; fail "job $id did not complete with exit 0"; }
    check_trials "$WORK/batch-store" slurm-multi-batch tunehost1,tunehost2
    ;;

  *) fail "unknown case '$CASE'" ;;
esac
echo "PASS ($CASE)"
