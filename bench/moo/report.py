#!/usr/bin/python3
"""bench/run moo's tables: reads the runs (one JSON line each: sampler, problem,
budget, hypervolumes per seed, suggest_ms) on stdin; prints, per budget (largest
first) and problem, the median and quartiles of the hypervolume and the mean
time per suggestion of each sampler, then one JSON line with every figure."""
import json
import sys

import numpy as np

SAMPLERS = ["tune-nsga2", "tune-tpe", "tune-random", "optuna-nsga2", "optuna-tpe", "optuna-random"]


def main():
    runs = [json.loads(line) for line in sys.stdin if line.strip()]
    tables = {}
    for run in runs:
        hv = np.array(run["hypervolumes"])
        q1, median, q3 = np.percentile(hv, [25, 50, 75])
        table = tables.setdefault(run["budget"], {"seeds": len(hv), "figures": {}})
        table["figures"].setdefault(run["problem"], {})[run["sampler"]] = {
            "median": median, "q1": q1, "q3": q3, "seeds": len(hv), "suggest_ms": run["suggest_ms"]}
    population = runs[0]["population"]
    for budget in sorted(tables, reverse=True):
        table = tables[budget]
        samplers = [s for s in SAMPLERS if any(s in by for by in table["figures"].values())]
        print(f"hypervolume after {budget} trials (population {population}), median [q1, q3] over "
              f"{table['seeds']} seeds; mean ms per suggestion")
        print(f"{'problem':<8}" + "".join(f"{s:>34}" for s in samplers))
        for problem, by_sampler in table["figures"].items():
            cells = []
            for s in samplers:
                f = by_sampler[s]
                cells.append(f"{f['median']:.3f} [{f['q1']:.3f}, {f['q3']:.3f}] {f['suggest_ms']:.3f} ms")
            print(f"{problem:<8}" + "".join(f"{c:>34}" for c in cells))
        print()
    print(json.dumps({"benchmark": "moo", "population": population,
                      "budgets": {str(b): tables[b] for b in sorted(tables, reverse=True)}}))


if __name__ == "__main__":
    main()
