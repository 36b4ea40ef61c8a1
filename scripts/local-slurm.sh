#!/usr/bin/env bash
# scripts/local-slurm.sh up [--hosts N] | down | env | status
#
# A real Slurm on this machine, from Debian's packages (munge slurmctld
# slurmd slurm-client), for tests and for trying `tune submit`:
#
#   scripts/local-slurm.sh up                # one node: this machine, its real CPU count
#   eval "$(scripts/local-slurm.sh env)"     # SLURM_CONF=/run/tune-slurm/slurm.conf
#   salloc -N1 -n2 build/tune run sweep.yaml
#   build/tune submit sweep.yaml --nodes 1
#   scripts/local-slurm.sh down              # cancels every job, stops the daemons, removes everything
#
# Everything lives in /run/tune-slurm: a munge key of its own and a munged on
# a private socket, slurm.conf, the controller's state, each slurmd's spool,
# the logs. The daemons run in the foreground (-F / -D), started in the
# background by this script, as root, without systemd. The config:
# select/cons_tres (CR_CPU) over the node's real CPUs (`slurmd -C`),
# proctrack/linuxproc and task/none (no cgroups), no accounting daemon, ports
# 16817 (slurmctld) and 16818 (slurmd) so a site's own Slurm is not in the
# way. When this machine's name resolves (it does to 127.0.0.1 on Debian's
# default /etc/hosts), CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
# makes slurmctld, slurmd, salloc and srun bind that address instead of the
# wildcard one.
# When /etc/slurm/slurm.conf does not exist, `up` links it to the config
# so `sinfo` works without SLURM_CONF; `down` removes that link.
#
# --hosts N: the nodes are the test hosts of scripts/local-cluster.sh
# (tunehost1..N, 10.77.0.11..; brought up here when no cluster is up, and
# then taken down by `down`; a cluster already up is borrowed and left up),
# one slurmd in each host's namespaces: its UTS hostname is its node name, so
# no `slurmd -N` is needed (Debian's slurmd is not built with
# --enable-multiple-slurmd, which -N requires). slurmctld runs inside
# tunehost1 too (SlurmctldHost=tunehost1(10.77.0.11)): every Slurm listener
# is then inside the namespace hosts, reached from this machine over the
# bridge tunebr0 only (this machine's own addresses get none). munged stays
# on this machine; its socket is a path under /run/tune-slurm, which the
# hosts see (a path socket crosses network namespaces). No NoInAddrAny
# there: the hosts' names do not resolve, and inside a host's network
# namespace the wildcard address is only its loopback and its bridge address.
#
# What was found with --hosts 2 (Slurm 22.05.8, OpenMPI 4.1; Nov 2026):
# - Slurm itself works: both nodes idle in ~1 s, `srun -N2` runs on both,
#   `salloc -N2 mpirun` of an MPI program (orted started by srun) works, as
#   does an sbatch job whose batch host is tunehost1.
# - Two MPI groups at once in one allocation do not: OpenMPI starts each
#   group's orted daemons with srun, a job step, and a Slurm 22.05 step takes
#   every CPU of its nodes unless --exact or --overlap is given, so the
#   second group's srun waits ("step creation temporarily disabled ...
#   Requested nodes are busy") and that trial hangs, or its mpirun reports
#   "An ORTE daemon has unexpectedly failed after launch". tune's mpirun
#   needs `--mca plm_slurm_args --overlap` inside an allocation (tune
#   places the ranks itself); with it (or SLURM_OVERLAP=1 in the
#   environment) `salloc -N2 -n4 tune run` and `tune submit --nodes 2` of
#   2-rank groups spread over both nodes complete.
# - The nodes' names (tunehost1..) resolve nowhere, so the driver cannot
#   find its own address toward them: `tune run` needs --network-interface
#   (tunebr0 for a driver on this machine, eth0 for a batch job's driver on
#   tunehost1; `tune submit --network-interface eth0` passes it on).
# - Files: the hosts share this machine's filesystem except /tmp, so a job
#   log or store under /tmp is written in the batch host's private /tmp (or
#   fails: a job whose --output is under this machine's /tmp ends FAILED,
#   exit 0:53, as its batch host cannot open it); use paths outside /tmp.
set -euo pipefail
STATE=/run/tune-slurm
CONF=$STATE/slurm.conf
CTLD_PORT=16817
SLURMD_PORT=16818
WAIT_S=${TUNE_SLURM_WAIT_S:-60}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLUSTER="$HERE/local-cluster.sh"
export SLURM_CONF=$CONF

die() { echo "local-slurm: $*" >&2; exit 1; }

need_tools() {
  local missing=()
  for tool in munged mungekey slurmctld slurmd sinfo squeue scancel sbatch salloc srun; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]} (apt-get install munge slurmctld slurmd slurm-client, or scripts/install-deps.sh)"
  [[ $(id -u) -eq 0 ]] || die "needs root (the daemons run as root)"
}

# Starts a daemon in the background, in its own session, with the marker
# variable that lets `down` find its leftovers (slurmstepd inherits it).
# Usage: start NAME [PREFIX...] -- COMMAND...
start() {
  local name=$1; shift
  local prefix=()
  while [[ $1 != -- ]]; do prefix+=("$1"); shift; done
  shift
  setsid "${prefix[@]}" env TUNE_SLURM_STATE="$STATE" SLURM_CONF="$CONF" "$@" \
    </dev/null >>"$STATE/log/$name.out" 2>&1 &
  echo "$! $name" >>"$STATE/pids"
}

# The daemons' logs; a daemon's stdout (NAME.out) only when it wrote no
# log file (it died before opening it).
log_tails() {
  for f in "$STATE"/log/*; do
    [[ -s $f ]] || continue
    case $f in
      */slurmd.out) compgen -G "$STATE/log/slurmd-*.log" >/dev/null && continue ;;
      */slurm*.out) [[ -s ${f%.out}.log ]] && continue ;;
    esac
    echo "---- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
}

fail_up() {
  echo "local-slurm: $*" >&2
  log_tails
  down >/dev/null 2>&1 || true
  exit 1
}

# The node line of this machine from `slurmd -C` (CPUs, sockets, cores, memory).
node_hardware() {
  slurmd -C | awk 'NR == 1 { $1 = ""; sub(/^ /, ""); print }'
}

write_conf() {
  local hosts=$1 ctld_host ctld_addr comm="" hardware
  hardware="$(node_hardware)"
  [[ -n $hardware ]] || die "slurmd -C printed no node line"
  if [[ $hosts -eq 0 ]]; then
    NODE_NAME="$(hostname -s)"
    local addr
    addr="$(getent ahostsv4 "$NODE_NAME" | awk 'NR == 1 { print $1 }')"
    if [[ -n $addr ]]; then
      comm="CommunicationParameters=NoCtldInAddrAny,NoInAddrAny"
    else
      addr=127.0.0.1
    fi
    ctld_host=$NODE_NAME ctld_addr=$addr
    NODES="NodeName=$NODE_NAME NodeAddr=$addr $hardware State=UNKNOWN"
    NODE_LIST=$NODE_NAME
  else
    ctld_host=tunehost1 ctld_addr=10.77.0.11
    NODES=""
    for i in $(seq 1 "$hosts"); do
      NODES+="NodeName=tunehost$i NodeAddr=10.77.0.$((10 + i)) $hardware State=UNKNOWN"$'\n'
    done
    NODE_LIST="tunehost[1-$hosts]"
  fi
  cat >"$CONF" <<EOF
# Written by scripts/local-slurm.sh up; removed by scripts/local-slurm.sh down.
ClusterName=tune
SlurmctldHost=$ctld_host($ctld_addr)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire (default 120 s) is also how long a requeued job waits to run again (slurm.requeue).
AuthInfo=socket=$STATE/munge/munge.socket,cred_expire=30
$comm
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=600
Waittime=0
$NODES
PartitionName=debug Nodes=$NODE_LIST Default=YES MaxTime=INFINITE State=UP
EOF
}

wait_idle() {
  local deadline=$((SECONDS + WAIT_S)) states=""
  while ((SECONDS < deadline)); do
    states="$(sinfo -h -N -o '%N %t' 2>/dev/null || true)"
    if [[ -n $states ]] && ! awk '$2 != "idle" { bad = 1 } END { exit bad ? 0 : 1 }' <<<"$states"; then
      return 0
    fi
    sleep 1
  done
  fail_up "the nodes are not idle after ${WAIT_S}s (sinfo: ${states:-no answer from slurmctld})"
}

up() {
  local hosts=0
  while [[ $# -gt 0 ]]; do
    case $1 in
      --hosts) hosts=${2:-}; shift 2 || true ;;
      --hosts=*) hosts=${1#--hosts=}; shift ;;
      *) die "unknown option '$1' (usage: up [--hosts N])" ;;
    esac
  done
  [[ $hosts =~ ^[0-9]+$ && $hosts -le 50 ]] || die "--hosts N needs 1 <= N <= 50"
  need_tools
  [[ -e $STATE ]] && down
  mkdir -p "$STATE"/{munge,ctld,spool,log}
  : >"$STATE/pids"

  if [[ $hosts -gt 0 ]]; then
    if [[ -e /run/tune-cluster/hosts ]]; then
      local have
      have="$(wc -l </run/tune-cluster/hosts)"
      [[ $have -ge $hosts ]] || fail_up "a local cluster of $have hosts is up; --hosts $hosts needs at least $hosts"
    else
      "$CLUSTER" up "$hosts" || fail_up "scripts/local-cluster.sh up $hosts failed"
      touch "$STATE/cluster-ours"
    fi
  fi

  mungekey --create --keyfile="$STATE/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$STATE/munge/munge.key"
  start munged -- munged --foreground --force --socket="$STATE/munge/munge.socket" \
    --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
    --seed-file="$STATE/munge/munged.seed" --log-file="$STATE/log/munged.log"
  for _ in $(seq 50); do [[ -S $STATE/munge/munge.socket ]] && break; sleep 0.1; done
  [[ -S $STATE/munge/munge.socket ]] || fail_up "munged did not create its socket"

  write_conf "$hosts"
  if [[ $hosts -eq 0 ]]; then
    mkdir -p "$STATE/spool/$NODE_NAME"
  else
    for i in $(seq 1 "$hosts"); do mkdir -p "$STATE/spool/tunehost$i"; done
  fi
  if [[ ! -e /etc/slurm/slurm.conf && ! -L /etc/slurm/slurm.conf ]]; then
    mkdir -p /etc/slurm
    ln -s "$CONF" /etc/slurm/slurm.conf
    touch "$STATE/etc-link-ours"
  fi

  if [[ $hosts -eq 0 ]]; then
    start slurmctld -- slurmctld -D -i -f "$CONF"
    start slurmd -- slurmd -D -f "$CONF"
  else
    start slurmctld "$CLUSTER" exec tunehost1 -- slurmctld -D -i -f "$CONF"
    for i in $(seq 1 "$hosts"); do
      start "slurmd-tunehost$i" "$CLUSTER" exec "tunehost$i" -- slurmd -D -f "$CONF"
    done
  fi
  wait_idle
  echo "local-slurm: up; run \`eval \"\$($HERE/local-slurm.sh env)\"\` (or use /etc/slurm/slurm.conf if linked):" >&2
  sinfo -N >&2
}

# Processes started by this script's daemons (slurmstepd and what it runs
# inherit TUNE_SLURM_STATE), and their descendants.
leftovers() {
  local marked=()
  for env in /proc/[0-9]*/environ; do
    local pid=${env#/proc/}; pid=${pid%/environ}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    if grep -qszx "TUNE_SLURM_STATE=$STATE" "$env"; then marked+=("$pid"); fi
  done
  [[ ${#marked[@]} -gt 0 ]] || return 0
  ps -eo pid=,ppid= | awk -v roots="${marked[*]}" -v self="$$" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END {
      changed = 1
      while (changed) { changed = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
      for (p in keep) if (p != self) print p
    }'
}

down() {
  if [[ -e $STATE ]]; then
    # Jobs first, while the controller can still cancel them.
    if [[ -e $CONF ]] && command -v squeue >/dev/null; then
      local jobs
      jobs="$(timeout 10 squeue -h -o %i 2>/dev/null || true)"
      if [[ -n $jobs ]]; then
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs 2>/dev/null || true
        for _ in $(seq 20); do
          [[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null || true)" ]] && break
          sleep 0.5
        done
      fi
    fi
    # The daemons this script started (their pids, and inside a namespace
    # host the process nsenter became), then anything they left.
    if [[ -e $STATE/pids ]]; then
      while read -r pid _; do kill -TERM "$pid" 2>/dev/null || true; done <"$STATE/pids"
    fi
    for pid in $(leftovers); do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 30); do
      local alive=""
      if [[ -e $STATE/pids ]]; then
        while read -r pid _; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$STATE/pids"
      fi
      [[ -z $alive && -z "$(leftovers)" ]] && break
      sleep 0.2
    done
    if [[ -e $STATE/pids ]]; then
      while read -r pid _; do kill -KILL "$pid" 2>/dev/null || true; done <"$STATE/pids"
    fi
    for pid in $(leftovers); do kill -KILL "$pid" 2>/dev/null || true; done
    if [[ -e $STATE/etc-link-ours && -L /etc/slurm/slurm.conf && "$(readlink /etc/slurm/slurm.conf)" == "$CONF" ]]; then
      rm -f /etc/slurm/slurm.conf
    fi
    if [[ -e $STATE/cluster-ours ]]; then
      "$CLUSTER" down || true
    fi
    rm -rf "$STATE"
  fi
}

status() {
  [[ -e $CONF ]] || { echo "local-slurm: not up"; exit 1; }
  sinfo -N
  squeue
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  status) status ;;
  *) echo "usage: scripts/local-slurm.sh up [--hosts N] | down | env | status" >&2; exit 2 ;;
esac
