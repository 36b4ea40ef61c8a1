#!/usr/bin/python3
"""bench/run moo's table: reads the runs (one JSON line each: sampler, problem,
hypervolumes per seed, suggest_ms) on stdin; prints per problem the median and
quartiles of the hypervolume and the mean time per suggestion of each sampler,
then one JSON line with every figure."""
import json
import sys

import numpy as np

SAMPLERS = ["tune-nsga2", "tune-random", "optuna-nsga2", "optuna-random"]


def main():
    runs = [json.loads(line) for line in sys.stdin if line.strip()]
    figures = {}
    for run in runs:
        hv = np.array(run["hypervolumes"])
        q1, median, q3 = np.percentile(hv, [25, 50, 75])
        figures.setdefault(run["problem"], {})[run["sampler"]] = {
            "median": median, "q1": q1, "q3": q3, "seeds": len(hv), "suggest_ms": run["suggest_ms"]}
    budget, population = runs[0]["budget"], runs[0]["population"]
    print(f"hypervolume after {budget} trials (population {population}), median [q1, q3] over "
          f"{len(runs[0]['hypervolumes'])} seeds; mean ms per suggestion")
    print(f"{'problem':<8}" + "".join(f"{s:>34}" for s in SAMPLERS))
    for problem, by_sampler in figures.items():
        cells = []
        for s in SAMPLERS:
            f = by_sampler[s]
            cells.append(f"{f['median']:.3f} [{f['q1']:.3f}, {f['q3']:.3f}] {f['suggest_ms']:.3f} ms")
        print(f"{problem:<8}" + "".join(f"{c:>34}" for c in cells))
    print(json.dumps({"benchmark": "moo", "budget": budget, "population": population, "figures": figures}))


if __name__ == "__main__":
    main()
