#!/usr/bin/python3
"""kill -9 torture test for tune (issue 15).

Each run starts a small sweep of the libtorch MLP trainable (2-rank MPI
groups, a checkpoint every iteration), SIGKILLs at a random moment either the
driver (`tune run`) or one rank of a running worker group, then runs
`tune resume` until the experiment is FINISHED. After each run it checks:

  complete   the experiment is FINISHED, it has exactly num_samples trials
             (indices 0..n-1), every one TERMINATED with results for
             iterations 1..stop (no gap)
  acked      every result a rank was acknowledged for (the TUNE_ACK_LOG hook,
             tuner/exec/session_base.h) is a row of `results`
  integrity  PRAGMA integrity_check says ok
  orphans    no process of the run (mpirun, ranks, drivers; found by an
             environment marker) is alive afterwards
  once       no (trial, iteration) result twice, no two trials with the
             same config (the space is continuous), results only from the
             trials' configs

Prints a table of outcomes and exits 1 if any run failed.

  /usr/bin/python3 tests/torture/torture.py --runs 50 --seed 1 --tune build/tune
"""
import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

MARKER = "TUNE_TORTURE_RUN"
STOP_AT = 4

SWEEP = """\
name: {name}
trainable: mlp
metric: loss
mode: min
num_samples: {trials}
resources: {{workers: 2, cpus_per_worker: 1}}
search: {{algorithm: random, seed: {seed}}}
stop: {{training_iteration: {stop}}}
param_space:
  lr: {{loguniform: [1.0e-3, 3.0e-1]}}
  momentum: {{uniform: [0.0, 0.95]}}
  width: 32
  batch_size: 32
  samples: {samples}
  epochs: {stop}
failure: {{max_failures: 3}}
"""


def processes_with_marker(tag):
    """pid -> (cmdline, MPI rank or None) of live processes whose environment has MARKER=tag."""
    needle = ("%s=%s" % (MARKER, tag)).encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            if needle not in env:
                continue
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # a zombie is dead; its parent has not reaped it yet
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        rank = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"OMPI_COMM_WORLD_RANK=")]
        found[pid] = (cmd, rank[0] if rank else None)
    return found


def kill_all(tag):
    for pid in processes_with_marker(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def count_lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


class Run:
    def __init__(self, args, index, rng, root):
        self.args = args
        self.index = index
        self.rng = rng
        self.dir = os.path.join(root, "run_%03d" % index)
        os.makedirs(self.dir)
        self.storage = os.path.join(self.dir, "store")
        self.name = "torture-%d" % index
        self.tag = "%d-%d-%d" % (os.getpid(), index, int(time.time() * 1000))
        self.acks = os.path.join(self.dir, "acks.log")
        self.sweep = os.path.join(self.dir, "sweep.yaml")
        with open(self.sweep, "w") as f:
            f.write(SWEEP.format(name=self.name, trials=args.trials, seed=rng.randrange(1 << 30), stop=STOP_AT,
                                 samples=args.samples))
        self.env = dict(os.environ)
        self.env.update({MARKER: self.tag, "TUNE_ACK_LOG": self.acks, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                         "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "TUNE_SCRATCH": os.path.join(self.dir, "scratch")})
        self.victim = "-"
        self.kill_at = None
        self.acks_at_kill = None
        self.resumes = 0
        self.restarts = []  # "resume" or "run" (killed before the experiment existed)
        self.exit_codes = []
        self.problems = []
        self.duration = 0.0

    def start(self, command, log):
        out = open(os.path.join(self.dir, log), "w")
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)

    def wait(self, proc, what):
        try:
            code = proc.wait(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            self.problems.append("%s hung (> %d s)" % (what, self.args.timeout))
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        self.exit_codes.append(code)
        return code

    def ranks(self, driver_pid):
        return sorted((pid, rank) for pid, (cmd, rank) in processes_with_marker(self.tag).items()
                      if rank is not None and pid != driver_pid)

    def execute(self, when, victim):
        """when: None (no kill), ("time", s): s after the start, or ("ack", k, f, fallback): after
        the k-th ack, f times this run's own interval between acks so far (fallback seconds, the
        control run's, before two acks have come): a box whose pace changes between runs (other
        tests, builds) still has its kills land between results, not after the run."""
        t0 = time.monotonic()
        driver = self.start([self.args.tune, "run", self.sweep, "--storage", self.storage, "--slots",
                             str(self.args.slots), "--quiet"], "run.log")
        if when is not None:
            if when[0] == "ack":
                first_ack = None
                while True:
                    count = count_lines(self.acks)
                    if count >= 1 and first_ack is None:
                        first_ack = time.monotonic()
                    if count >= when[1] or driver.poll() is not None:
                        break
                    time.sleep(0.002)
                interval = when[3]
                if first_ack is not None and count >= 2:
                    interval = (time.monotonic() - first_ack) / (count - 1)
                deadline = time.monotonic() + when[2] * interval
            else:
                deadline = t0 + when[1]
            while time.monotonic() < deadline and driver.poll() is None:
                time.sleep(0.002)
            target = None
            if victim == "rank":
                # A rank of a running group: wait for one to exist (groups start and end).
                while driver.poll() is None and time.monotonic() < deadline + 5:
                    ranks = self.ranks(driver.pid)
                    if ranks:
                        target, rank = self.rng.choice(ranks)
                        victim = "rank" + rank
                        break
                    time.sleep(0.01)
            elif driver.poll() is None:
                target = driver.pid
            if target is not None:
                self.acks_at_kill = count_lines(self.acks)
                try:
                    os.kill(target, signal.SIGKILL)
                    self.victim = victim
                    self.kill_at = time.monotonic() - t0
                except OSError:
                    self.victim = victim + " (gone)"
            else:
                self.victim = "none (done)"
        self.wait(driver, "tune run")
        if when is None:  # the control run: how long its results took to come
            try:
                with self.db() as con:
                    first, last = con.execute("SELECT min(time), max(time) FROM results").fetchone()
                self.ack_span = (last - first) if first is not None else 0.0
            except sqlite3.Error:
                self.ack_span = 0.0
        while self.status() != "FINISHED" and self.resumes < self.args.max_resumes:
            self.resumes += 1
            if self.status() is None:
                # Killed before the experiment was stored: nothing to resume, run it again.
                command = [self.args.tune, "run", self.sweep]
                self.restarts.append("run")
            else:
                command = [self.args.tune, "resume", self.name]
                self.restarts.append("resume")
            proc = self.start(command + ["--storage", self.storage, "--slots", str(self.args.slots), "--quiet"],
                              "restart_%d.log" % self.resumes)
            self.wait(proc, "tune " + command[1])
        self.duration = time.monotonic() - t0
        # Every tune command exits 0, but for the driver we killed.
        codes = self.exit_codes[1:] if self.victim == "driver" else self.exit_codes
        if any(codes):
            self.problems.append("exit codes %s" % self.exit_codes)
        # Orphans: a group that lost its driver must end by itself (rank 0
        # notices the closed connection); give it a moment.
        deadline = time.monotonic() + self.args.orphan_grace
        left = processes_with_marker(self.tag)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = processes_with_marker(self.tag)
        self.orphans = left
        if left:
            self.problems.append("orphans: " + "; ".join("%d %s" % (pid, cmd[:80]) for pid, (cmd, _) in left.items()))
            kill_all(self.tag)
        self.check_store()

    def db(self):
        return sqlite3.connect("file:%s?mode=ro" % os.path.join(self.storage, "tune.db"), uri=True, timeout=30)

    def status(self):
        try:
            with self.db() as con:
                row = con.execute("SELECT status FROM experiments WHERE name=?", (self.name,)).fetchone()
            return row[0] if row else None
        except sqlite3.Error:
            return None

    def check_store(self):
        self.results = self.ack_count = self.attempts = 0
        self.integrity = "?"
        try:
            con = self.db()
        except sqlite3.Error as e:
            self.problems.append("cannot open store: %s" % e)
            return
        with con:
            self.integrity = ";".join(r[0] for r in con.execute("PRAGMA integrity_check"))
            if self.integrity != "ok":
                self.problems.append("integrity_check: " + self.integrity[:200])
            exp = con.execute("SELECT id, status FROM experiments WHERE name=?", (self.name,)).fetchone()
            if not exp:
                self.problems.append("no experiment row")
                return
            exp_id, status = exp
            if status != "FINISHED":
                self.problems.append("experiment %s after %d resumes" % (status, self.resumes))
            trials = con.execute("SELECT id, trial_index, status, config_json, last_iteration, error FROM trials "
                                 "WHERE experiment_id=? ORDER BY trial_index", (exp_id,)).fetchall()
            indices = [t[1] for t in trials]
            if indices != list(range(self.args.trials)):
                self.problems.append("trial indices %s, expected 0..%d" % (indices, self.args.trials - 1))
            configs = [t[3] for t in trials]
            if len(set(configs)) != len(configs):
                self.problems.append("two trials with the same config")
            for tid, index, tstatus, _, last, error in trials:
                if tstatus != "TERMINATED":
                    self.problems.append("trial %d %s%s" % (index, tstatus, ": " + error[:120] if error else ""))
                its = [r[0] for r in con.execute("SELECT iteration FROM results WHERE trial_id=? ORDER BY id", (tid,))]
                if len(its) != len(set(its)):
                    dup = sorted({i for i in its if its.count(i) > 1})
                    self.problems.append("trial %d: iterations %s recorded twice" % (index, dup))
                if sorted(set(its)) != list(range(1, STOP_AT + 1)) and tstatus == "TERMINATED":
                    self.problems.append("trial %d: iterations %s, expected 1..%d" % (index, sorted(set(its)), STOP_AT))
                if last != (max(its) if its else 0):
                    self.problems.append("trial %d: last_iteration %s, results up to %s" % (index, last, max(its or [0])))
            self.attempts = sum(r[0] for r in con.execute("SELECT attempts FROM trials WHERE experiment_id=?", (exp_id,)))
            self.results = con.execute("SELECT count(*) FROM results r JOIN trials t ON t.id=r.trial_id "
                                       "WHERE t.experiment_id=?", (exp_id,)).fetchone()[0]
            stored = set(con.execute("SELECT t.trial_index, r.iteration FROM results r JOIN trials t "
                                     "ON t.id=r.trial_id WHERE t.experiment_id=?", (exp_id,)).fetchall())
        con.close()
        acked = []
        if os.path.exists(self.acks):
            with open(self.acks) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) != 4 or parts[0] != self.name:
                        self.problems.append("bad ack line %r" % line)
                        continue
                    acked.append((int(parts[1]), int(parts[2]), parts[3]))
        self.ack_count = len(acked)
        missing = sorted({(t, i, v) for t, i, v in acked if (t, i) not in stored})
        if missing:
            self.problems.append("acknowledged but not stored: %s" % missing[:10])

    def row(self):
        return [str(self.index), self.victim, "-" if self.kill_at is None else "%.2f" % self.kill_at,
                "-" if self.acks_at_kill is None else str(self.acks_at_kill), ",".join(self.restarts) or "-",
                "%.1f" % self.duration, str(self.attempts), str(self.results), str(self.ack_count), self.integrity[:10],
                str(len(self.orphans)), "ok" if not self.problems else "FAIL"]


def table(rows, header):
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="kill runs (default 50)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock, printed)")
    parser.add_argument("--tune", default=None, help="the tune binary (default: build/tune)")
    parser.add_argument("--trials", type=int, default=3, help="trials per sweep (default 3)")
    parser.add_argument("--samples", type=int, default=2048, help="MLP training samples (default 2048)")
    parser.add_argument("--slots", type=int, default=2, help="--slots of each driver (default 2: one group)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds one tune run/resume may take")
    parser.add_argument("--max-resumes", type=int, default=4, help="resumes before a run counts as failed")
    parser.add_argument("--orphan-grace", type=float, default=10.0,
                        help="seconds a run's processes may take to end after its last driver")
    parser.add_argument("--min-kills", type=int, default=None,
                        help="runs whose victim was really killed (not already gone or done) below which the "
                             "test fails (default: half of --runs)")
    parser.add_argument("--workdir", default=None, help="keep every run's store and logs here")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    args.tune = os.path.abspath(args.tune or os.path.join(here, "..", "..", "build", "tune"))
    if not os.access(args.tune, os.X_OK):
        sys.exit("torture: no tune binary at %s (--tune)" % args.tune)
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    rng = random.Random(seed)
    root = args.workdir or tempfile.mkdtemp(prefix="tune-torture-")
    os.makedirs(root, exist_ok=True)
    print("torture: %d runs, seed %d, %s, in %s" % (args.runs, seed, args.tune, root))
    sys.stdout.flush()

    started = time.monotonic()
    # Run 0: no kill; its duration spreads the kill moments of the others.
    control = Run(args, 0, rng, root)
    control.execute(None, None)
    # Most of a run is starting processes (libtorch, mpirun); training is a
    # few seconds of acks. A kill moment is a random time of the whole run
    # (1 in 4), else a random time after a random ack, so kills land between
    # and around results as often as during start-up.
    span = max(control.duration, 1.0)
    total = max(control.ack_count, 1)
    interval = control.ack_span / total if control.ack_span else 0.05
    runs = [control]
    for index in range(1, args.runs + 1):
        run = Run(args, index, rng, root)
        victim = rng.choice(["driver", "rank"])
        if rng.random() < 0.25:
            run.execute(("time", rng.uniform(0.0, span)), victim)
        else:
            # Before the last result: after it the run is all but over.
            run.execute(("ack", rng.randrange(max(total - 1, 1)), rng.uniform(0.0, 2.0), interval), victim)
        runs.append(run)
        if run.problems:
            print("run %d FAILED: %s" % (index, " | ".join(run.problems)), file=sys.stderr)
            sys.stderr.flush()
    header = ["run", "victim", "kill_s", "acks@kill", "then", "total_s", "attempts", "results", "acks", "integrity",
              "orphans", "verdict"]
    print()
    table([r.row() for r in runs], header)
    failed = [r for r in runs if r.problems]
    kinds = {}
    for r in runs[1:]:
        kind = r.victim.split()[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    print("\n%d runs (+1 control) in %.0f s, seed %d; victims: %s; failed: %d" % (
        args.runs, time.monotonic() - started, seed, ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
        len(failed)))
    for r in failed:
        print("  run %d (%s): %s" % (r.index, r.dir, " | ".join(r.problems)))
    # A run whose victim was gone (or the sweep done) proves nothing about a
    # kill: too few real ones and the test says so rather than passing.
    kills = sum(1 for r in runs[1:] if r.kill_at is not None)
    min_kills = args.min_kills if args.min_kills is not None else (args.runs + 1) // 2
    print("real kills: %d of %d runs (at least %d wanted)" % (kills, args.runs, min_kills))
    if kills < min_kills:
        print("torture: only %d kills landed on a live process (--min-kills %d)" % (kills, min_kills))
        failed = failed or [None]
    if not args.workdir and not failed:
        shutil.rmtree(root, ignore_errors=True)
    elif failed:
        print("logs and stores kept in %s" % root)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
