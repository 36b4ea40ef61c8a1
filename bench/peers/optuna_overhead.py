#!/usr/bin/python3
"""Optuna peer of `overhead_bench trials`: N trivial trials, RDB (SQLite) storage.

Same 3-parameter space as bench/overhead/overhead_bench.cpp (x uniform(-5, 10),
y loguniform(1e-5, 1e-1), z randint(1, 10): tune's randint is upper-exclusive,
Optuna's suggest_int is inclusive, so 1..9 here), RandomSampler(seed), a
trivial objective. The timed region is create_study + optimize (the import is
not timed; tune's process start is not timed either). Prints one JSON object.

    /usr/bin/python3 bench/peers/optuna_overhead.py [--trials N] [--seed S] [--tmp DIR]
"""
import argparse
import json
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import time

import optuna


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", default=None, help="parent of the temporary storage dir")
    args = parser.parse_args()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tmp = tempfile.mkdtemp(prefix="optuna-bench-", dir=args.tmp)
    try:
        url = "sqlite:///" + os.path.join(tmp, "optuna.db")
        name = "bench-trials-%d-%d" % (os.getpid(), int(time.time() * 1000))

        def objective(trial):
            x = trial.suggest_float("x", -5, 10)
            y = trial.suggest_float("y", 1e-5, 1e-1, log=True)
            z = trial.suggest_int("z", 1, 9)
            return (x - 2) ** 2 + math.log10(y) ** 2 + z

        t0 = time.perf_counter()
        study = optuna.create_study(storage=url, study_name=name, direction="minimize",
                                    sampler=optuna.samplers.RandomSampler(seed=args.seed))
        study.optimize(objective, n_trials=args.trials)
        wall = time.perf_counter() - t0

        with sqlite3.connect(os.path.join(tmp, "optuna.db")) as db:
            complete = db.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
        print(json.dumps({
            "benchmark": "trials_in_process", "system": "optuna", "version": optuna.__version__,
            "storage": "sqlite", "sampler": "RandomSampler", "seed": args.seed,
            "trials": args.trials, "wall_s": wall, "trials_per_s": args.trials / wall,
            "terminated": complete,
            "python": sys.version.split()[0],
        }))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
