#!/usr/bin/python3
"""Table + one JSON line from bench/bayes runs (one JSON object per line)."""
import json
import sys

import numpy as np


def label(run):
    name = run["algorithm"]
    if run.get("params", {}).get("multivariate"):
        name += "-multivariate"
    if run.get("concurrency", 1) > 1:
        name += f" ({run['concurrency']} pending)"
    if not name.startswith("optuna"):
        name = "tune-" + name
    return name


def main():
    runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    summary = {"regret": {}, "latency_ms": None}
    print(f"{'function':<10} {'budget':>6}  {'searcher':<34} {'median':>10} {'q25':>10} {'q75':>10} {'s/seed':>7}")
    for run in runs:
        if "latency" in run:
            summary["latency_ms"] = run["latency"]
            continue
        r = np.asarray(run["regrets"], dtype=float)
        q25, med, q75 = np.percentile(r, [25, 50, 75])
        name = label(run)
        seconds = run["seconds"] / len(r)
        print(f"{run['function']:<10} {run['budget']:>6}  {name:<34} {med:>10.3g} {q25:>10.3g} {q75:>10.3g} {seconds:>7.2f}")
        summary["regret"].setdefault(run["function"], {})[name] = {
            "budget": run["budget"], "seeds": len(r), "median": med, "q25": q25, "q75": q75, "seconds_per_seed": seconds}
    if summary["latency_ms"]:
        print()
        print("bayes suggestion latency, 6-D (ms; median over repeats)")
        print(f"{'observations':>12} {'cached':>8} {'with refit':>11} {'amortized':>10}")
        for n, v in sorted(summary["latency_ms"].items(), key=lambda kv: int(kv[0])):
            print(f"{n:>12} {v['cached_ms']:>8.1f} {v['with_refit_ms']:>11.1f} {v['amortized_ms']:>10.1f}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
