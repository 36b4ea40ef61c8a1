#!/usr/bin/python3
"""Peer for bench/run bayes: Optuna 3.1 samplers on the same test functions.

    optuna_bayes.py --sampler tpe|tpe-multivariate|cmaes|random --function branin --budget 50 --seeds 20

prints one JSON line {"algorithm", "function", "budget", "regrets": [...], "seconds"}.
In-memory storage, sequential trials, seeds 1000..1000+seeds-1 (as bayes_bench).
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import optuna


def branin(x):
    a, b, c = 1.0, 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s


H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
                 [17, 8, 0.05, 10, 0.1, 14]])
H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                        [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
H3_ALPHA = H6_ALPHA
H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
H3_P = np.array([[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547],
                 [0.0381, 0.5743, 0.8828]])


def hartmann(alpha, A, P):
    def f(x):
        x = np.asarray(x)
        return float(-np.sum(alpha * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))
    return f


def camel(x):
    a, b = x
    return (4 - 2.1 * a * a + a ** 4 / 3) * a * a + a * b + (-4 + 4 * b * b) * b * b


def levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    s = math.sin(math.pi * w[0]) ** 2
    for i in range(len(x) - 1):
        s += (w[i] - 1) ** 2 * (1 + 10 * math.sin(math.pi * w[i] + 1) ** 2)
    s += (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    return s


FUNCTIONS = {
    "branin": ([(-5, 10), (0, 15)], 0.39788735772973816, branin),
    "hartmann6": ([(0, 1)] * 6, -3.322368011391339, hartmann(H6_ALPHA, H6_A, H6_P)),
    "camel": ([(-3, 3), (-2, 2)], -1.0316284534898774, camel),
    "hartmann3": ([(0, 1)] * 3, -3.862779787332663, hartmann(H3_ALPHA, H3_A, H3_P)),
    "levy4": ([(-10, 10)] * 4, 0.0, levy),
}


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "tpe-multivariate":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"unknown sampler {name}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sampler", required=True)
    parser.add_argument("--function", required=True)
    parser.add_argument("--budget", type=int, required=True)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings
    warnings.filterwarnings("ignore")
    bounds, minimum, f = FUNCTIONS[args.function]
    regrets = []
    start = time.perf_counter()
    for s in range(args.seeds):
        study = optuna.create_study(sampler=make_sampler(args.sampler, 1000 + s))

        def objective(trial):
            x = [trial.suggest_float(f"x{j}", lo, hi) for j, (lo, hi) in enumerate(bounds)]
            return f(x)

        study.optimize(objective, n_trials=args.budget)
        regrets.append(study.best_value - minimum)
    print(json.dumps({"algorithm": "optuna-" + args.sampler, "function": args.function, "budget": args.budget,
                      "concurrency": 1, "regrets": regrets, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    sys.exit(main())
