#!/usr/bin/python3
"""Peer for bench/run bayes: Optuna 3.1 samplers on the same problems.

    optuna_bayes.py --sampler tpe|tpe-multivariate|cmaes|random --function branin --budget 50 --seeds 20 \
        [--evaluator build-bench/bench/bayes_bench]

prints one JSON line {"algorithm", "function", "budget", "regrets": [...], "best_values": [...], "seconds"}.
In-memory storage, sequential trials, seeds 1000..1000+seeds-1 (as bayes_bench).

The five functions of issue 5 (branin ... levy4) are implemented here (they
equal bayes_bench's to 1e-9: `--check`). Every other problem of the suite is
evaluated by bayes_bench itself: `bayes_bench describe` gives tune's search
space, mapped one to one onto suggest_float / suggest_int / suggest_categorical
(uniform -> float, loguniform -> float log, randint [a, b) -> int [a, b - 1],
lograndint -> int log, choice -> categorical), and `bayes_bench serve` evaluates
each config (one JSON line in, {"value", "true"} out; "seed S" restarts the
observation-noise stream as bayes_bench does for seed S). The searcher's pick is
the trial with the best observed value; its noise-free value is scored.
"""
import argparse
import json
import math
import subprocess
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


class Evaluator:
    """bayes_bench serve --function NAME, one config per line."""

    def __init__(self, binary, name):
        self.meta = json.loads(subprocess.run([binary, "describe", "--function", name], check=True,
                                              capture_output=True, text=True).stdout)
        self.proc = subprocess.Popen([binary, "serve", "--function", name], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def seed(self, seed):
        self.proc.stdin.write(f"seed {seed}\n")

    def __call__(self, config):
        self.proc.stdin.write(json.dumps(config) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("bayes_bench serve stopped")
        answer = json.loads(line)
        return answer["value"], answer["true"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def suggest(trial, name, domain):
    (kind, args), = domain.items()
    if kind == "uniform":
        return trial.suggest_float(name, args[0], args[1])
    if kind == "loguniform":
        return trial.suggest_float(name, args[0], args[1], log=True)
    if kind == "randint":
        return trial.suggest_int(name, args[0], args[1] - 1)
    if kind == "lograndint":
        return trial.suggest_int(name, args[0], args[1] - 1, log=True)
    if kind == "choice":
        return trial.suggest_categorical(name, args)
    raise SystemExit(f"no Optuna mapping for domain {domain}")


def check(binary):
    """The Python functions equal bayes_bench's (serve) at a few random points."""
    rng = np.random.default_rng(0)
    for name, (bounds, _, f) in FUNCTIONS.items():
        ev = Evaluator(binary, name)
        for _ in range(5):
            x = [float(rng.uniform(lo, hi)) for lo, hi in bounds]
            _, theirs = ev({f"x{j}": v for j, v in enumerate(x)})
            if abs(theirs - f(x)) > 1e-9 * max(1.0, abs(theirs)):
                raise SystemExit(f"{name}: python {f(x)} != bayes_bench {theirs} at {x}")
        ev.close()
    print("ok: python functions equal bayes_bench's")


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
    parser.add_argument("--sampler")
    parser.add_argument("--function")
    parser.add_argument("--budget", type=int)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--evaluator", help="bayes_bench (for the problems not implemented here)")
    parser.add_argument("--check", action="store_true", help="compare the Python functions with --evaluator's")
    args = parser.parse_args()
    if args.check:
        return check(args.evaluator)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings
    warnings.filterwarnings("ignore")
    evaluator = None
    if args.function in FUNCTIONS:
        bounds, minimum, f = FUNCTIONS[args.function]
        space = {f"x{j}": {"uniform": [lo, hi]} for j, (lo, hi) in enumerate(bounds)}
        meta = {}

        def evaluate(config):
            y = f([config[f"x{j}"] for j in range(len(bounds))])
            return y, y
    else:
        if not args.evaluator:
            raise SystemExit(f"{args.function}: needs --evaluator (bayes_bench)")
        evaluator = Evaluator(args.evaluator, args.function)
        meta = evaluator.meta
        space = {p["path"]: p["domain"] for p in meta.pop("space")}
        minimum = meta["minimum"]
        evaluate = evaluator
    budget = args.budget or meta.get("budget")
    regrets, best_values = [], []
    start = time.perf_counter()
    for s in range(args.seeds):
        seed = 1000 + s
        if evaluator:
            evaluator.seed(seed)
        study = optuna.create_study(sampler=make_sampler(args.sampler, seed))
        truth = {}

        def objective(trial):
            config = {name: suggest(trial, name, domain) for name, domain in space.items()}
            y, truth[trial.number] = evaluate(config)
            return y

        study.optimize(objective, n_trials=budget)
        best = truth[study.best_trial.number]
        best_values.append(best)
        regrets.append(best - minimum if minimum is not None else None)
    if evaluator:
        evaluator.close()
    out = dict(meta)
    out.update({"algorithm": "optuna-" + args.sampler, "function": args.function, "budget": budget,
                "concurrency": 1, "regrets": regrets, "best_values": best_values,
                "seconds": time.perf_counter() - start})
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
