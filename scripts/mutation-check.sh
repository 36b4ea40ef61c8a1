#!/usr/bin/env bash
# scripts/mutation-check.sh [BUILD_DIR]: breaks five rules on purpose, one at
# a time, and lists the tests that catch each (issue 31): ASHA's promotion
# rule (top 2/rf promoted instead of 1/rf), PBT's exploit (the top quantile
# cloned instead of the bottom one), the driver lease (any holder taken over),
# ack-after-commit (verdicts sent before the batch commits) and the trial
# lifecycle's exploit rule (a donor without a checkpoint, or the trial
# itself, accepted). MUTATIONS="a b" runs only those. Each
# mutation is applied to the source, built, tested, and reverted (also on
# Ctrl-C). A mutation no test catches is reported and the exit status is 1.
# Takes a few minutes a mutation (rebuilds). Needs a configured BUILD_DIR
# (default: build).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TESTS='Asha|Hyperband|Pbt|Pb2|Scheduler|Simulat|TrialStateMachine|CliResume|Driver|Store|Tuner\.|DiskFull'
work="$(mktemp -d)"
current=""
restore() { [[ -n $current ]] && cp "$work/original" "$ROOT/$current"; current=""; }
trap 'restore; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
uncaught=0

mutate() {  # NAME FILE OLD NEW
  local name=$1 file=$2
  [[ -n ${MUTATIONS:-} && " $MUTATIONS " != *" $name "* ]] && return
  cp "$ROOT/$file" "$work/original"
  current=$file
  /usr/bin/python3 - "$ROOT/$file" "$3" "$4" <<'PY' || { echo "$name: the code to break is not in $file any more"; restore; uncaught=1; return; }
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(1)
open(path, "w").write(text.replace(old, new))
PY
  if ! cmake --build "$BUILD" -j"$(nproc)" >"$work/build.log" 2>&1; then
    echo "$name: the mutant does not build (see above)"; tail -5 "$work/build.log"; restore; uncaught=1; return
  fi
  (cd "$BUILD" && ctest -R "$TESTS" -j"$(nproc)" --timeout 300 >"$work/ctest.log" 2>&1)
  local caught
  caught="$(grep -E '^\s+[0-9]+ - ' "$work/ctest.log" | sed -E 's/^\s+[0-9]+ - //')"
  if [[ -z $caught ]]; then
    echo "$name ($file): NOT CAUGHT"; uncaught=1
  else
    echo "$name ($file): caught by"; sed 's/^/  /' <<<"$caught"
  fi
  restore
}

mutate asha_promotion schedulers/asha_scheduler.cpp \
  'std::floor(static_cast<double>(rung.sorted.size()) / rf_ + 1e-9)' \
  'std::floor(2 * static_cast<double>(rung.sorted.size()) / rf_ + 1e-9)'
mutate pbt_exploit schedulers/pbt_scheduler.cpp '  if (below >= n) return {};' '  if (below < n) return {};'
mutate lease tuner/driver/driver_lease.cpp \
  '    return h.host == lease_->host && !process_alive(h.pid);' '    return true;'
mutate ack_after_commit tuner/driver/driver.cpp \
  '    save_states(false);
    txn.commit();
    // Only now, with the batch durable, do trials learn the verdicts.
    for (auto& [reply, verdict] : replies) {
      if (reply) reply(verdict);
    }' \
  '    save_states(false);
    for (auto& [reply, verdict] : replies) {
      if (reply) reply(verdict);
    }
    txn.commit();'
mutate exploit_vetting schedulers/trial_state_machine.cpp \
  '  if (decision.donor == trial || !contains(decision.donor) || !has_checkpoint(decision.donor)) {' \
  '  if (!contains(decision.donor)) {'
cmake --build "$BUILD" -j"$(nproc)" >"$work/build.log" 2>&1 || { echo "mutation-check: the restored tree does not build"; exit 1; }
exit $uncaught
