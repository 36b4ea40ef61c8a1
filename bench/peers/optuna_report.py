"""Optuna 3.1's plot_optimization_history + plot_parallel_coordinate, written
with write_html, on the trials of a tune store (the trials tune's report shows).

usage: optuna_report.py STORE/tune.db OUT_DIR REPEAT
The trials (params, final loss, every intermediate loss) are read from the
store and added to an in-memory study with add_trials; that is not timed.
Timed: building both figures and writing both HTML files (plotly.js inlined,
like tune's self-contained page), REPEAT times. Prints one JSON line.
"""
import json
import os
import sqlite3
import sys
import time
from collections import defaultdict

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution

optuna.logging.set_verbosity(optuna.logging.WARNING)
db, out_dir, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
curves = defaultdict(dict)
for trial_id, iteration, loss in con.execute(
        "SELECT trial_id, iteration, json_extract(metrics_json, '$.loss') FROM results"):
    curves[trial_id][iteration] = loss
distributions = {"lr": FloatDistribution(1e-5, 1e-1, log=True), "width": CategoricalDistribution([32, 64, 128, 256]),
                 "dropout": FloatDistribution(0.0, 0.5), "optimizer": CategoricalDistribution(["sgd", "adam", "rmsprop"])}
trials = []
for trial_id, config in con.execute("SELECT id, config_json FROM trials ORDER BY trial_index"):
    params = json.loads(config)
    curve = curves[trial_id]
    trials.append(optuna.trial.create_trial(params=params, distributions=distributions,
                                            value=curve[max(curve)], intermediate_values=curve))
study = optuna.create_study(direction="minimize")
study.add_trials(trials)

seconds, cpu_seconds = [], []
for _ in range(repeat):
    start, cpu_start = time.perf_counter(), time.process_time()
    optuna.visualization.plot_optimization_history(study).write_html(os.path.join(out_dir, "optuna_history.html"))
    optuna.visualization.plot_parallel_coordinate(study).write_html(os.path.join(out_dir, "optuna_parallel.html"))
    seconds.append(time.perf_counter() - start)
    cpu_seconds.append(time.process_time() - cpu_start)
sizes = [os.path.getsize(os.path.join(out_dir, f)) for f in ("optuna_history.html", "optuna_parallel.html")]
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "bytes": sum(sizes), "trials": len(trials),
                  "optuna": optuna.__version__}))
