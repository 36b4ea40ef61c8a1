"""Optuna 3.1's SuccessiveHalvingPruner on the curves scheduler_bench wrote.

usage: optuna_sha.py CURVES.json REDUCTION_FACTOR
Trials run one after another (n_jobs=1); each reports its curve step by step
and stops when should_prune() says so. Prints one JSON line: the stop step of
every trial and the time per report+should_prune.
"""
import json
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
curves = json.load(open(sys.argv[1]))
rf = int(float(sys.argv[2]))
study = optuna.create_study(direction="minimize", pruner=optuna.pruners.SuccessiveHalvingPruner(
    min_resource=1, reduction_factor=rf, min_early_stopping_rate=0))
stops, seconds, decisions = [], 0.0, 0
for curve in curves:
    trial = study.ask()
    stop = len(curve)
    for t, loss in enumerate(curve, start=1):
        start = time.perf_counter()
        trial.report(loss, t)
        pruned = trial.should_prune()
        seconds += time.perf_counter() - start
        decisions += 1
        if pruned:
            stop = t
            break
    if stop < len(curve):
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    else:
        study.tell(trial, curve[-1])
    stops.append(stop)
print(json.dumps({"bench": "optuna_sha", "stops": stops, "us_per_decision": 1e6 * seconds / decisions,
                  "decisions": decisions}))
