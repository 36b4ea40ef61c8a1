#!/usr/bin/python3
"""Load test for tune's store (issue 15).

`--sweeps` (8) writers each run one sweep after another (`tune run`, the
in-process `synthetic` trainable: many short results) into ONE store, while
`--readers` (8) readers poll `tune trials NAME --json` (every 4th poll
`tune results NAME --json`) on the writers' current sweeps, for `--duration`
seconds (300). Then it checks:

  - no "database is locked" / "busy" in any stderr, every command exited 0
    (a reader's query of a sweep that has not created its experiment yet is
    retried, not counted);
  - no lost result: each finished sweep has exactly num_samples x iterations
    result rows (the sweep file stops every trial at `iterations`), every
    trial TERMINATED, and every result a trial was acknowledged for
    (TUNE_ACK_LOG, tuner/exec/session_base.h) is stored;
  - PRAGMA integrity_check is ok;

and prints the readers' latency (p50/p90/p99/max) per command, the same
query's latency once the load is over (most of it is starting the tune
process), and the writers' throughput. Exit 1 if a check failed.

  /usr/bin/python3 tests/torture/load.py --duration 300 --tune build/tune
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

SWEEP = """\
name: {name}
trainable: synthetic
metric: loss
mode: min
num_samples: {trials}
resources: {{workers: 1}}
search: {{algorithm: random, seed: {seed}}}
stop: {{training_iteration: {iterations}}}
param_space:
  x: {{uniform: [-5.0, 5.0]}}
  iterations: {iterations}
  sleep_s: {sleep}
"""

LOCK_WORDS = ("database is locked", "database table is locked", "SQLITE_BUSY", "sqlite_busy")


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class Shared:
    def __init__(self, writers):
        self.lock = threading.Lock()
        self.current = [None] * writers  # each writer's running sweep (name) once its experiment exists
        self.finished = []  # (name, ack_log, exit code, seconds, stderr)
        self.latency = {"trials": [], "results": []}
        self.rows_seen = {"trials": 0, "results": 0}
        self.problems = []
        self.not_yet = 0


def writer(args, index, shared, store, root, stop_at):
    rng = random.Random(args.seed * 1000 + index)
    k = 0
    while time.monotonic() < stop_at:
        name = "load-w%d-s%d" % (index, k)
        k += 1
        path = os.path.join(root, name + ".yaml")
        with open(path, "w") as f:
            f.write(SWEEP.format(name=name, trials=args.trials, seed=rng.randrange(1 << 30),
                                 iterations=args.iterations, sleep=args.sleep))
        acks = os.path.join(root, name + ".acks")
        env = dict(os.environ, TUNE_ACK_LOG=acks)
        t0 = time.monotonic()
        proc = subprocess.Popen([args.tune, "run", path, "--storage", store, "--slots", str(args.slots), "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        with shared.lock:
            shared.current[index] = name
        _, err = proc.communicate()
        with shared.lock:
            shared.finished.append((name, acks, proc.returncode, time.monotonic() - t0, err.decode(errors="replace")))


def reader(args, index, shared, store, stop_at):
    rng = random.Random(args.seed * 1000 + 500 + index)
    polls = 0
    while time.monotonic() < stop_at:
        with shared.lock:
            names = [n for n in shared.current if n]
        if not names:
            time.sleep(0.05)
            continue
        name = rng.choice(names)
        kind = "results" if (polls + index) % 4 == 3 else "trials"
        polls += 1
        t0 = time.monotonic()
        proc = subprocess.run([args.tune, kind, name, "--json", "--storage", store], capture_output=True)
        seconds = time.monotonic() - t0
        err = proc.stderr.decode(errors="replace")
        if proc.returncode != 0 and ("no experiment named" in err or "no tune store at" in err):
            with shared.lock:
                shared.not_yet += 1  # the writer's driver has not created it yet
            continue
        problem = None
        if proc.returncode != 0 or err.strip():
            problem = "%s %s: exit %d: %s" % (kind, name, proc.returncode, err.strip()[:300])
        else:
            try:
                rows = json.loads(proc.stdout)
            except ValueError as e:
                problem = "%s %s: not JSON (%s): %r" % (kind, name, e, proc.stdout[:200])
        with shared.lock:
            if problem:
                shared.problems.append("reader %d: %s" % (index, problem))
            else:
                shared.latency[kind].append(seconds)
                shared.rows_seen[kind] += len(rows) if isinstance(rows, list) else 1


def check_store(args, shared, store):
    db = os.path.join(store, "tune.db")
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
    integrity = ";".join(r[0] for r in con.execute("PRAGMA integrity_check"))
    if integrity != "ok":
        shared.problems.append("integrity_check: " + integrity[:300])
    expected = args.trials * args.iterations
    total_results = total_acks = 0
    for name, acks, code, seconds, err in shared.finished:
        if code != 0:
            shared.problems.append("tune run %s: exit %d: %s" % (name, code, err.strip()[:300]))
        elif err.strip():
            shared.problems.append("tune run %s wrote to stderr: %s" % (name, err.strip()[:300]))
        row = con.execute("SELECT id, status FROM experiments WHERE name=?", (name,)).fetchone()
        if not row:
            shared.problems.append("%s: no experiment" % name)
            continue
        exp_id, status = row
        if status != "FINISHED":
            shared.problems.append("%s: %s" % (name, status))
        trials = con.execute("SELECT status, count(*) FROM trials WHERE experiment_id=? GROUP BY status",
                             (exp_id,)).fetchall()
        if trials != [("TERMINATED", args.trials)]:
            shared.problems.append("%s: trials %s, expected %d TERMINATED" % (name, trials, args.trials))
        stored = con.execute("SELECT t.trial_index, r.iteration FROM results r JOIN trials t ON t.id=r.trial_id "
                             "WHERE t.experiment_id=?", (exp_id,)).fetchall()
        total_results += len(stored)
        if len(stored) != expected or len(set(stored)) != expected:
            shared.problems.append("%s: %d results (%d distinct), expected %d" % (
                name, len(stored), len(set(stored)), expected))
        stored = set(stored)
        acked = []
        if os.path.exists(acks):
            with open(acks) as f:
                acked = [tuple(line.split()) for line in f]
        total_acks += len(acked)
        missing = [a for a in acked if len(a) != 4 or a[0] != name or (int(a[1]), int(a[2])) not in stored]
        if missing:
            shared.problems.append("%s: acknowledged but not stored: %s" % (name, missing[:5]))
        if len(acked) != expected:
            shared.problems.append("%s: %d acks, expected %d" % (name, len(acked), expected))
    con.close()
    return integrity, total_results, total_acks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=300, help="seconds of load (default 300)")
    parser.add_argument("--sweeps", type=int, default=8, help="concurrent sweeps (default 8)")
    parser.add_argument("--readers", type=int, default=8, help="concurrent readers (default 8)")
    parser.add_argument("--trials", type=int, default=8, help="trials per sweep (default 8)")
    parser.add_argument("--iterations", type=int, default=100, help="results per trial (default 100)")
    parser.add_argument("--sleep", type=float, default=0.005, help="seconds per result in the trainable")
    parser.add_argument("--slots", type=int, default=2, help="--slots of each sweep (default 2)")
    parser.add_argument("--idle-polls", type=int, default=10, help="polls of an idle store afterwards (baseline)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tune", default=None, help="the tune binary (default: build/tune)")
    parser.add_argument("--workdir", default=None, help="keep the store and sweep files here")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    args.tune = os.path.abspath(args.tune or os.path.join(here, "..", "..", "build", "tune"))
    if not os.access(args.tune, os.X_OK):
        sys.exit("load: no tune binary at %s (--tune)" % args.tune)
    root = args.workdir or tempfile.mkdtemp(prefix="tune-load-")
    os.makedirs(root, exist_ok=True)
    store = os.path.join(root, "store")
    print("load: %d sweeps (%d trials x %d results each, %d slots) + %d readers for %.0f s into %s" % (
        args.sweeps, args.trials, args.iterations, args.slots, args.readers, args.duration, store))
    sys.stdout.flush()

    shared = Shared(args.sweeps)
    started = time.monotonic()
    stop_at = started + args.duration
    threads = [threading.Thread(target=writer, args=(args, i, shared, store, root, stop_at)) for i in range(args.sweeps)]
    threads += [threading.Thread(target=reader, args=(args, i, shared, store, stop_at)) for i in range(args.readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started  # writers finish the sweep they were running
    integrity, results, acks = check_store(args, shared, store)
    # The same query with nothing else running (most of a poll is starting the
    # tune process: loading libtorch), for comparison.
    idle = []
    if shared.finished:
        for _ in range(args.idle_polls):
            t0 = time.monotonic()
            subprocess.run([args.tune, "trials", shared.finished[0][0], "--json", "--storage", store],
                           capture_output=True)
            idle.append((time.monotonic() - t0) * 1000)
    locked = [p for p in shared.problems if any(w.lower() in p.lower() for w in LOCK_WORDS)]

    print()
    header = ["command", "polls", "rows/poll", "p50_ms", "p90_ms", "p99_ms", "max_ms"]
    rows = []
    for kind in ("trials", "results"):
        lat = [s * 1000 for s in shared.latency[kind]]
        rows.append(["tune %s --json" % kind, str(len(lat)),
                     "%.0f" % (shared.rows_seen[kind] / len(lat)) if lat else "-"] +
                    ["%.0f" % percentile(lat, p) for p in (50, 90, 99)] + ["%.0f" % max(lat) if lat else "-"])
    if idle:
        rows.append(["idle: tune trials --json", str(len(idle)), "-"] +
                    ["%.0f" % percentile(idle, p) for p in (50, 90, 99)] + ["%.0f" % max(idle)])
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print()
    sweep_s = [s for _, _, _, s, _ in shared.finished]
    print("sweeps finished: %d (%.1f s median), results stored: %d (%.0f/s), acks: %d, "
          "reader polls before a sweep existed: %d" % (len(shared.finished), percentile(sweep_s, 50), results,
                                                        results / wall, acks, shared.not_yet))
    print("integrity_check: %s; 'database is locked' errors: %d; other problems: %d; wall %.0f s" % (
        integrity, len(locked), len(shared.problems) - len(locked), wall))
    summary = {"duration_s": args.duration, "wall_s": round(wall, 1), "sweeps": len(shared.finished),
               "results": results, "results_per_s": round(results / wall, 1), "acks": acks,
               "locked_errors": len(locked), "problems": len(shared.problems), "integrity": integrity}
    for kind in ("trials", "results"):
        lat = [s * 1000 for s in shared.latency[kind]]
        summary["tune_" + kind] = {"polls": len(lat), "p50_ms": round(percentile(lat, 50), 1),
                         "p99_ms": round(percentile(lat, 99), 1), "max_ms": round(max(lat), 1) if lat else None}
    summary["idle_tune_trials_p50_ms"] = round(percentile(idle, 50), 1) if idle else None
    for p in shared.problems[:20]:
        print("  problem: " + p)
    print(json.dumps(summary))
    ok = not shared.problems and shared.finished and shared.latency["trials"]
    if not args.workdir and ok:
        shutil.rmtree(root, ignore_errors=True)
    elif not ok:
        print("store and logs kept in %s" % root)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
