#!/usr/bin/python3
"""Table + one JSON line from bench/bayes runs (one JSON object per line).

Regret of a run = noise-free value of the searcher's pick (the config with the
best observed value) - the problem's minimum. For the real tuning tasks (no
known minimum) the reference is min(the best value recorded in bayes_bench, the
best value any sampler and seed found in these runs), so no regret is negative.

Suite summary: per problem, ratio = optuna-tpe median regret / tune-bayes median
regret (> 1: bayes better), both floored at 1e-12 (a median regret of 0 counts as
1e-12); the geometric mean of the ratios over the problems; the problems where
bayes is more than 1.5x worse than Optuna TPE (ratio < 1/1.5).
"""
import json
import math
import sys

import numpy as np

FLOOR = 1e-12
ORDER = ["tune-bayes", "tune-bayes (4 pending)", "tune-tpe", "tune-tpe-multivariate", "tune-random", "optuna-tpe",
         "optuna-tpe-multivariate", "optuna-cmaes", "optuna-random"]


def label(run):
    name = run["algorithm"]
    if run.get("params", {}).get("multivariate"):
        name += "-multivariate"
    if run.get("concurrency", 1) > 1:
        name += f" ({run['concurrency']} pending)"
    if not name.startswith("optuna"):
        name = "tune-" + name
    return name


def rank(name):
    return ORDER.index(name) if name in ORDER else len(ORDER)


def main():
    runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    summary = {"regret": {}, "suite": {}, "latency_ms": None}
    problems = {}  # name -> {"meta": first run with metadata, "runs": [...]}
    for run in runs:
        if "latency" in run:
            summary["latency_ms"] = run["latency"]
            continue
        entry = problems.setdefault(run["function"], {"meta": {}, "runs": []})
        entry["runs"].append(run)
        if "type" in run and not entry["meta"]:
            entry["meta"] = run

    # Reference values for the problems without a known minimum.
    for name, entry in problems.items():
        meta = entry["meta"]
        if meta.get("known", True):
            continue
        seen = [v for run in entry["runs"] for v in run["best_values"] if v is not None]
        recorded = meta.get("minimum")
        entry["reference"] = min(seen + ([recorded] if recorded is not None else []))

    print(f"{'function':<15} {'budget':>6}  {'searcher':<26} {'median':>10} {'q25':>10} {'q75':>10} {'s/seed':>7}")
    medians = {}
    for name, entry in problems.items():
        for run in sorted(entry["runs"], key=lambda r: rank(label(r))):
            if "reference" in entry:
                r = np.asarray(run["best_values"], dtype=float) - entry["reference"]
            else:
                r = np.asarray(run["regrets"], dtype=float)
            q25, med, q75 = np.percentile(r, [25, 50, 75])
            searcher = label(run)
            seconds = run["seconds"] / len(r)
            print(f"{name:<15} {run['budget']:>6}  {searcher:<26} {med:>10.3g} {q25:>10.3g} {q75:>10.3g} {seconds:>7.2f}")
            summary["regret"].setdefault(name, {})[searcher] = {
                "budget": run["budget"], "seeds": len(r), "median": med, "q25": q25, "q75": q75,
                "seconds_per_seed": seconds}
            medians.setdefault(name, {})[searcher] = med

    ratios = {}
    print()
    print("suite: ratio = optuna-tpe median regret / tune-bayes median regret (> 1: bayes better;"
          f" medians floored at {FLOOR:g})")
    print(f"{'function':<15} {'dims':>4} {'type':<16} {'minimum':>12} {'bayes':>10} {'optuna-tpe':>10} {'ratio':>8}"
          f" {'best other':>14}")
    for name, entry in problems.items():
        m = medians.get(name, {})
        if "tune-bayes" not in m or "optuna-tpe" not in m:
            continue
        meta = entry["meta"]
        ratio = max(m["optuna-tpe"], FLOOR) / max(m["tune-bayes"], FLOOR)
        ratios[name] = ratio
        others = {k: v for k, v in m.items() if k != "tune-bayes" and "pending" not in k}
        best_other = min(others, key=others.get)
        minimum = entry.get("reference", meta.get("minimum"))
        mark = "" if meta.get("known", True) else "*"
        print(f"{name:<15} {meta.get('dims', ''):>4} {meta.get('type', ''):<16} {minimum:>11.6g}{mark:1} "
              f"{m['tune-bayes']:>10.3g} {m['optuna-tpe']:>10.3g} {ratio:>8.3g} {best_other:>14}")
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        worse = sorted(n for n, r in ratios.items() if r < 1 / 1.5)
        behind = sorted(n for n, r in ratios.items() if r < 1)
        print(f"geometric mean of the ratios over {len(ratios)} problems: {geomean:.3g}"
              f"  (goal >= 4); bayes > 1.5x worse than optuna-tpe on {len(worse)}: {', '.join(worse) or '-'}")
        print(f"bayes worse than optuna-tpe (ratio < 1; goal: none) on {len(behind)}: {', '.join(behind) or '-'}")
        narrow = [r for n, r in ratios.items() if problems[n]["meta"].get("type") == "narrow-basin"]
        if narrow:
            print(f"geometric mean over the {len(narrow)} narrow-basin problems: "
                  f"{math.exp(sum(math.log(r) for r in narrow) / len(narrow)):.3g}")
        rest = [r for n, r in ratios.items() if problems[n]["meta"].get("type") != "smooth"]
        geomean_rest = math.exp(sum(math.log(r) for r in rest) / len(rest)) if rest else float("nan")
        print(f"geometric mean without the {len(ratios) - len(rest)} smooth problems: {geomean_rest:.3g}")
        print("* best value found by any sampler/seed in this run or recorded before (no known minimum)")
        summary["suite"] = {"ratios": ratios, "geometric_mean": geomean, "geometric_mean_not_smooth": geomean_rest,
                            "worse_than_1_5x": worse, "worse_than_optuna_tpe": behind,
                            "floor": FLOOR, "references": {n: e["reference"] for n, e in problems.items()
                                                           if "reference" in e}}

    if summary["latency_ms"]:
        print()
        print("bayes suggestion latency, 6-D (ms; median over repeats)")
        print(f"{'observations':>12} {'cached':>8} {'with refit':>11} {'amortized':>10}")
        for n, v in sorted(summary["latency_ms"].items(), key=lambda kv: int(kv[0])):
            print(f"{n:>12} {v['cached_ms']:>8.1f} {v['with_refit_ms']:>11.1f} {v['amortized_ms']:>10.1f}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
