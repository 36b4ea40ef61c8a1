#!/usr/bin/python3
"""Chaos on three namespace hosts (scripts/local-cluster.sh up 3).

    chaos.py [--schedules N] [--seed S] [--json FILE]

Each schedule runs a PBT sweep of 2-rank groups spread over the hosts, with a
checkpoint every iteration, while a seeded schedule of faults hits it: every
process of one host killed, another host's link taken down and brought back,
30 silent and 5 trickling connections to the driver from the third, and one
rank killed (on the first or the second: the third stays healthy). After each: the sweep finished (exit 0), every acknowledged
result is in the store (TUNE_ACK_LOG), the store's integrity is ok, the host
that stayed healthy was never taken out, no process or scratch folder is left
on any host, nor a killed mpirun's session folder on the driver's machine.
Prints a table (one row per schedule: the faults' times, lost attempts,
seconds from a link going down to its group being given up, slot utilisation
of the healthy hosts while trials were pending) and, last, one JSON line. Exits non-zero on the first failed check. ctest runs two schedules
(cluster.chaos: seed 7; cluster.chaos_seed2); `bench/run chaos` runs 20.
"""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flood import flood_program  # noqa: E402
from leftovers import mpirun_leftovers  # noqa: E402

TUNE = os.environ["TUNE_BINARY"]
SOURCE = os.environ["TUNE_SOURCE_DIR"]
CLUSTER = os.path.join(SOURCE, "scripts", "local-cluster.sh")
HOSTS = {"10.77.0.11": "tunehost1", "10.77.0.12": "tunehost2", "10.77.0.13": "tunehost3"}
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_plm_rsh_agent=os.path.join(SOURCE, "scripts", "local-cluster-agent.sh"))

SWEEP = """
name: chaos
trainable: synthetic
metric: loss
mode: min
num_samples: 6
resources: {{workers: 2, placement: spread}}
search: {{algorithm: random, seed: {seed}}}
scheduler:
  type: pbt
  time_attr: training_iteration
  perturbation_interval: 8
  seed: {seed}
  hyperparam_mutations: {{x: {{uniform: [0.1, 3.0]}}}}
failure: {{max_failures: 3, host_timeout_s: 4, max_host_failures: 2, host_check_interval_s: 3}}
param_space:
  x: {{uniform: [0.1, 3.0]}}
  iterations: {iterations}
  checkpoint: true
  sleep_s: 0.15
checkpoint: {{num_to_keep: 2}}
"""


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def pids(namespace):
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def kill_all(namespace):
    for pid in pids(namespace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_one_rank(namespace):
    """One worker rank (a tune-full process that is not mpirun/orted) on the host."""
    for pid in pids(namespace):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe.endswith("tune-full"):
            os.kill(pid, signal.SIGKILL)
            return True
    return False


def link(namespace, state):
    subprocess.run(["ip", "-n", namespace, "link", "set", "eth0", state], check=True)


def driver_port(deadline):
    while time.time() < deadline:
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if '"tune-full"' in line and fields[3].startswith("10.77.0.1:"):
                return int(fields[3].rsplit(":", 1)[1])
        time.sleep(0.1)
    raise Failed("the driver never listened on 10.77.0.1")




def results_count(db_path):
    try:
        with sqlite3.connect(db_path) as db:
            return db.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_clean(seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not any(pids(ns) for ns in HOSTS.values()):
            return
        time.sleep(0.2)
    raise Failed("processes left on the hosts: %s" % {ns: pids(ns) for ns in HOSTS.values()})


def scratch_left(namespace):
    """What is left of the sweep's scratch folder on a host (its files with their times), or ""."""
    r = subprocess.run([CLUSTER, "exec", namespace, "sh", "-c",
                        "test -e /tmp/tune-scratch/chaos && find /tmp/tune-scratch/chaos -printf '%TT %p\\n' | sort"],
                       capture_output=True, text=True)
    return r.stdout.strip()


def utilisation(db, healthy, slots_per_host):
    """Busy slot-seconds over available slot-seconds of the healthy hosts, while trials were pending."""
    starts = db.execute("SELECT e.time, e.detail_json, t.trial_index FROM events e JOIN trials t ON t.id = e.trial_id "
                        "WHERE e.kind = 'trial_started' ORDER BY e.id").fetchall()
    busy = 0.0
    first, last = None, None
    for when, detail, trial in starts:
        d = json.loads(detail)
        end = db.execute("SELECT max(r.time) FROM results r JOIN trials t ON t.id = r.trial_id "
                         "WHERE t.trial_index = ? AND r.attempt = ?", (trial, d["attempt"])).fetchone()[0] or when
        first = when if first is None else min(first, when)
        last = end if last is None else max(last, end)
        busy += max(0.0, end - when) * sum(1 for h in d["hosts"] if h in healthy)
    if first is None or last <= first:
        return 0.0
    return busy / ((last - first) * slots_per_host * len(healthy))


def run_schedule(seed, work, iterations):
    rng = random.Random(seed)
    hosts = list(HOSTS)
    rng.shuffle(hosts)
    killed, cut, flooder = hosts  # whose processes die, whose link goes down, where the flood comes from
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sweep = os.path.join(work, "chaos.yaml")
    with open(sweep, "w") as f:
        f.write(SWEEP.format(seed=seed, iterations=iterations))
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("".join(f"{h} slots=2\n" for h in HOSTS))
    storage = os.path.join(work, "store")
    ack_log = os.path.join(work, "acks.log")
    env = dict(ENV, TUNE_ACK_LOG=ack_log)
    faults = sorted([("kill_host", rng.uniform(1, 6)), ("link_down", rng.uniform(4, 12)),
                     ("flood", rng.uniform(0, 8)), ("kill_rank", rng.uniform(2, 14))], key=lambda f: f[1])
    start = time.time()
    proc = subprocess.Popen([TUNE, "run", sweep, "--storage", storage, "--hostfile", hostfile,
                             "--progress-interval", "1000"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    flood = None
    down_at = up_at = None
    log = []
    try:
        port = driver_port(time.time() + 120)
        db_path = os.path.join(storage, "tune.db")
        deadline = time.time() + 120
        while results_count(db_path) < 6 and time.time() < deadline:
            time.sleep(0.1)
        check(results_count(db_path) >= 6, "no results within 120 s")
        zero = time.time()
        for kind, at in faults:
            time.sleep(max(0.0, zero + at - time.time()))
            if proc.poll() is not None:
                break
            if kind == "kill_host":
                kill_all(HOSTS[killed])
                log.append(f"kill {killed} @{at:.1f}")
            elif kind == "link_down":
                link(HOSTS[cut], "down")
                down_at = time.time()
                log.append(f"link {cut} @{at:.1f}")
            elif kind == "flood":
                flood = subprocess.Popen(["ip", "netns", "exec", HOSTS[flooder], "/usr/bin/python3", "-c",
                                          flood_program(port, silent=30, trickle=5, seconds=25)])
                log.append(f"flood from {flooder} @{at:.1f}")
            elif kind == "kill_rank":
                # Not the flooder: the host that only received connections must
                # stay healthy, or the check below tests nothing (seed 7 picked
                # it, and one more loss there took it out).
                victim = rng.choice([killed, cut])
                if kill_one_rank(HOSTS[victim]):
                    log.append(f"rank on {victim} @{at:.1f}")
        if down_at is not None:
            time.sleep(max(0.0, down_at + rng.uniform(8, 12) - time.time()))
            link(HOSTS[cut], "up")
            up_at = time.time()
        try:
            out, _ = proc.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            raise Failed("the sweep did not end within 400 s: " + out[-2000:])
    finally:
        link(HOSTS[cut], "up")
        if flood:
            flood.kill()
            flood.wait()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wall = time.time() - start
    check(proc.returncode == 0, f"the sweep exited {proc.returncode}: {out[-3000:]}")
    db = sqlite3.connect(os.path.join(storage, "tune.db"))
    check(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "store integrity")
    trials = db.execute("SELECT trial_index, status FROM trials").fetchall()
    check(len(trials) == 6 and all(s == "TERMINATED" for _, s in trials), f"trials: {trials}")
    stored = set(db.execute("SELECT t.trial_index, r.iteration FROM results r JOIN trials t ON t.id = r.trial_id"))
    acked = 0
    for line in open(ack_log) if os.path.exists(ack_log) else []:
        experiment, trial, iteration, _ = line.split()
        acked += 1
        check((int(trial), int(iteration)) in stored, f"acknowledged but not stored: trial {trial} iteration {iteration}")
    check(acked >= 6 * 10, f"only {acked} acknowledgements logged: the hook saw too little")
    excluded = [json.loads(d)["host"] for (d,) in db.execute("SELECT detail_json FROM events WHERE kind = 'hosts_excluded'")]
    check(flooder not in excluded, f"{flooder} only received connections, yet was taken out: {excluded}")
    retries = [json.loads(d) for (d,) in db.execute("SELECT detail_json FROM events WHERE kind = 'trial_retry'")]
    freed = None
    if down_at is not None:
        after = [t for (t,) in db.execute("SELECT time FROM events WHERE kind = 'trial_retry' AND time >= ? "
                                          "AND detail_json LIKE ?", (down_at, f'%"{cut}"%'))]
        if after:
            freed = min(after) - down_at
    healthy = [flooder] + ([killed] if killed not in excluded else [])
    use = utilisation(db, healthy, 2)
    db.close()
    wait_clean(90)
    for host, namespace in HOSTS.items():
        left = scratch_left(namespace)
        check(not left, f"scratch of chaos left on {host} (at {time.strftime('%T')}; link up at "
                        f"{time.strftime('%T', time.localtime(up_at)) if up_at else '-'}):\n{left}\n{out[-1500:]}")
    left = mpirun_leftovers(start)
    check(not left, f"session folders of mpiruns the driver killed, left behind: {left}")
    return {"seed": seed, "faults": log, "wall_s": round(wall, 1), "lost_attempts": len(retries),
            "excluded": sorted(set(excluded)), "link_down_to_free_s": None if freed is None else round(freed, 2),
            "healthy_utilisation": round(use, 3), "acked": acked}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    base = os.environ.get("TUNE_CLUSTER_WORK", os.path.join(os.getcwd(), "cluster_work"))
    rows = []
    for i in range(args.schedules):
        seed = args.seed + i
        try:
            row = run_schedule(seed, os.path.join(base, f"chaos_{seed}"), args.iterations)
        except Failed as e:
            print(f"FAIL (schedule {seed}): {e}", file=sys.stderr)
            sys.exit(1)
        rows.append(row)
        print(f"seed {seed}: {row['wall_s']} s, {row['lost_attempts']} lost attempts, excluded {row['excluded']}, "
              f"link down -> group given up {row['link_down_to_free_s']} s, healthy hosts busy "
              f"{100 * row['healthy_utilisation']:.0f}%; {'; '.join(row['faults'])}", flush=True)
    frees = sorted(r["link_down_to_free_s"] for r in rows if r["link_down_to_free_s"] is not None)
    summary = {"bench": "chaos", "schedules": len(rows), "passed": len(rows),
               "link_down_to_free_s_median": frees[len(frees) // 2] if frees else None,
               "link_down_to_free_s_max": frees[-1] if frees else None,
               "healthy_utilisation_median": sorted(r["healthy_utilisation"] for r in rows)[len(rows) // 2],
               "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f)
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))


if __name__ == "__main__":
    main()
