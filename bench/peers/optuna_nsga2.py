#!/usr/bin/python3
"""Peer for bench/run moo: Optuna 3.1's NSGAIISampler, TPESampler and RandomSampler on the same problems.

    optuna_nsga2.py --sampler nsga2|tpe|random --problem zdt1 --budget 500 --population 50 --seeds 10
    optuna_nsga2.py --check --evaluator build-bench/bench/moo_bench

prints one JSON line {"sampler", "problem", "budget", "population", "points": [[f, ...] per trial] per
seed, "suggest_ms"}; moo_bench score turns the points into hypervolumes (tune's exact
hypervolume, the same code for every sampler). Sequential trials through ask/tell, in-memory
storage, seeds 1000..1000+seeds-1 (as moo_bench). TPESampler keeps its defaults
(n_startup_trials=10, multivariate=False), as tune's tpe. suggest_ms is the mean time of study.ask()
plus the trial's suggest_float calls (where the sampler does its work), tell excluded.
The problems equal moo_bench's to 1e-12 (`--check`).
"""
import argparse
import json
import math
import random
import subprocess
import sys
import time

import optuna

PROBLEMS = {"zdt1": (10, 2), "zdt2": (10, 2), "zdt3": (10, 2), "dtlz2": (7, 3)}


def zdt_g(x):
    return 1 + 9 * sum(x[1:]) / (len(x) - 1)


def evaluate(problem, x):
    if problem == "dtlz2":
        g = sum((v - 0.5) ** 2 for v in x[2:])
        a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
        return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)]
    g = zdt_g(x)
    r = x[0] / g
    if problem == "zdt1":
        return [x[0], g * (1 - math.sqrt(r))]
    if problem == "zdt2":
        return [x[0], g * (1 - r * r)]
    return [x[0], g * (1 - math.sqrt(r) - r * math.sin(10 * math.pi * x[0]))]


def check(evaluator):
    rng = random.Random(1)
    for problem, (n, _) in PROBLEMS.items():
        xs = [[rng.random() for _ in range(n)] for _ in range(50)]
        out = subprocess.run([evaluator, "evaluate", "--problem", problem], input="".join(json.dumps(x) + "\n" for x in xs),
                             capture_output=True, text=True, check=True).stdout.split("\n")
        for x, line in zip(xs, out):
            theirs, ours = json.loads(line), evaluate(problem, x)
            if any(abs(a - b) > 1e-12 for a, b in zip(theirs, ours)):
                sys.exit(f"optuna_nsga2.py: {problem} differs from moo_bench at {x}: {ours} vs {theirs}")
    print("optuna_nsga2.py: problems match moo_bench", file=sys.stderr)


def run(sampler_name, problem, budget, population, seeds):
    n, m = PROBLEMS[problem]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    points, ask_seconds = [], 0.0
    for s in range(seeds):
        seed = 1000 + s
        if sampler_name == "nsga2":
            sampler = optuna.samplers.NSGAIISampler(population_size=population, seed=seed)
        elif sampler_name == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.create_study(directions=["minimize"] * m, sampler=sampler)
        values = []
        for _ in range(budget):
            start = time.perf_counter()
            trial = study.ask()
            x = [trial.suggest_float(f"x{k}", 0, 1) for k in range(n)]
            ask_seconds += time.perf_counter() - start
            values.append(evaluate(problem, x))
            study.tell(trial, values[-1])
        points.append(values)
    return {"sampler": "optuna-" + sampler_name, "problem": problem, "budget": budget, "population": population,
            "points": points, "suggest_ms": 1e3 * ask_seconds / (budget * seeds)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sampler", choices=["nsga2", "tpe", "random"], default="nsga2")
    parser.add_argument("--problem", choices=sorted(PROBLEMS), default="zdt1")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--population", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--evaluator")
    args = parser.parse_args()
    if args.check:
        check(args.evaluator)
        return
    print(json.dumps(run(args.sampler, args.problem, args.budget, args.population, args.seeds)))


if __name__ == "__main__":
    main()
