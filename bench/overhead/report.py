#!/usr/bin/python3
"""Table + final JSON line for `bench/run overhead`.

    report.py RUNS.tsv [--quick 0|1]

RUNS.tsv: one line per benchmark process, "LABEL<tab>JSON" (bench/overhead/run.sh).
Repeated labels are summarised by their median (min and max kept in the JSON).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

GOALS = {
    "tune_in_process_trials_per_s": 1000.0,  # >=
    "tune_mpi_trials_per_s": 100.0,          # >=
    "overhead_over_ideal_pct": 2.0,          # <=
    "results_per_s": 20000.0,                # >=
}


def load(path):
    runs = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            label, text = line.split("\t", 1)
            runs.setdefault(label, []).append(json.loads(text))
    return runs


def summary(runs, label, key):
    values = [r[key] for r in runs.get(label, []) if r.get(key) is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def median(runs, label, key):
    s = summary(runs, label, key)
    return None if s is None else s["median"]


def first(runs, label):
    return runs.get(label, [None])[0]


def median_run(runs, label, key):
    """The run whose `key` is the median (the lower middle for an even count),
    so that the figures shown from it belong together."""
    rs = sorted(runs.get(label, []), key=lambda r: r[key])
    return rs[(len(rs) - 1) // 2] if rs else None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain"], capture_output=True, text=True)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def fmt(value, spec, unit=""):
    return "n/a" if value is None else format(value, spec) + unit


def verdict(ok):
    return "n/a" if ok is None else ("ok" if ok else "MISSED")


PART_NOTES = {
    "launch": "what can start, starts (holds suggest, add_trial, start)",
    "suggest": "the searcher's suggest()",
    "add_trial": "a new trial's row, scheduler on_trial_add",
    "start": "the attempt to the executor, its rows",
    "wait": "blocked for events (not a cost)",
    "poll": "the executor's poll()",
    "result": "a result: row, searcher, scheduler, decision",
    "end": "an attempt's end: status row, searcher, scheduler",
    "state_save": "scheduler/searcher state to the store",
    "commit": "the batch's transaction commits",
    "reply": "verdicts to the trials after the commit",
    "housekeeping": "timeouts, leases, budget, progress",
    "progress": "the progress table (every 0.05 s here)",
    "folder": "a trial's folder (trial's thread)",
    "loop": "the whole driver loop (Driver::step)",
}


def parts_table(runs):
    """Each part of the driver's loop per trial: time (the driver's own profile, median over
    the `parts` runs) and instructions (callgrind, `parts_ir`). None when there is neither."""
    timed = runs.get("parts", [])
    ir = first(runs, "parts_ir")
    if not timed and not ir:
        return None
    known = set(timed[0]["parts"]) if timed else set()
    if ir:
        known |= set(ir["parts"])
    names = [p for p in PART_NOTES if p in known] + sorted(known - set(PART_NOTES))  # the loop's order
    rows = {}
    for name in names:
        row = {}
        per_trial = [r["parts"][name]["seconds"] * 1e6 / r["trials"] for r in timed if name in r["parts"]]
        per_call = [r["parts"][name]["seconds"] * 1e6 / r["parts"][name]["calls"]
                    for r in timed if name in r["parts"] and r["parts"][name]["calls"]]
        calls = [r["parts"][name]["calls"] / r["trials"] for r in timed if name in r["parts"]]
        if per_trial:
            row["us_per_trial"] = statistics.median(per_trial)
            row["us_per_trial_min"], row["us_per_trial_max"] = min(per_trial), max(per_trial)
            row["calls_per_trial"] = statistics.median(calls)
        if per_call:
            row["us_per_call"] = statistics.median(per_call)
        if ir and name in ir["parts"]:
            row["ir_per_trial"] = ir["parts"][name]["ir_per_trial"]
        rows[name] = row
    head = "%-13s %11s %10s %24s %12s  %s"
    print()
    what = ("%d runs of %d in-process trials x %d reports, 2 slots" % (len(timed), timed[0]["trials"], timed[0]["reports"])
            if timed else "no timed runs")
    print("driver parts per trial (%s; time: the driver's profile, TUNE_PROFILE, median (min-max);" % what)
    print("  instructions: callgrind, %s)" % ("%d trials x %d reports, the tune::core binary" % (ir["trials"], ir["reports"])
                                              if ir else "valgrind not installed"))
    print(head % ("part", "calls/trial", "us/call", "us/trial", "Ir/trial", "what"))
    for name, row in rows.items():
        span = ("%.1f (%.1f-%.1f)" % (row["us_per_trial"], row["us_per_trial_min"], row["us_per_trial_max"])
                if "us_per_trial" in row else "-")
        print(head % (name, "%.2f" % row["calls_per_trial"] if "calls_per_trial" in row else "-",
                      "%.2f" % row["us_per_call"] if "us_per_call" in row else "-", span,
                      "{:,.0f}".format(row["ir_per_trial"]) if "ir_per_trial" in row else "-", PART_NOTES.get(name, "")))
    if timed:
        wall = statistics.median(r["wall_s"] * 1e6 / r["trials"] for r in timed)
        print("wall per trial (fit(), 2 slots): %.1f us; results per trial: %d" % (wall, timed[0]["reports"]))
    return {"rows": rows, "program_ir_per_trial": ir and ir["program_ir"] and ir["program_ir"] / ir["trials"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs")
    parser.add_argument("--quick", type=int, default=0)
    parser.add_argument("--load", default="", help="/proc/loadavg (1, 5, 15 min) at the start")
    parser.add_argument("--load-end", default="", help="and at the end")
    args = parser.parse_args()
    runs = load(args.runs)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    inproc = median(runs, "trials", "trials_per_s")
    mpi = median(runs, "mpi", "trials_per_s")
    mpi_core = median(runs, "mpi_core", "trials_per_s")
    optuna = median(runs, "optuna", "trials_per_s")
    results = median(runs, "results", "results_per_s")
    ideal = median_run(runs, "ideal", "overhead_pct")
    waiting = median_run(runs, "ideal_waiting", "overhead_pct")
    plain = median_run(runs, "ideal_plain", "overhead_pct")
    memory, memory_core, store = (first(runs, k) for k in ("memory", "memory_core", "store"))
    optuna_run = first(runs, "optuna")

    def ratio(a):
        return None if a is None or not optuna else a / optuna

    reporters = {label: median(runs, label, "results_per_s") for label in ("results", "results_64", "results_512")}
    durable = all(r["all_durable"] for label in reporters for r in runs.get(label, []))
    trials_complete = all(r["terminated"] == r["trials"] for k in ("trials", "mpi", "mpi_startup", "mpi_core", "memory")
                          for r in runs.get(k, []))
    figures = {
        "tune_in_process_trials_per_s": inproc,
        "tune_mpi_trials_per_s": mpi,
        "tune_mpi_core_binary_trials_per_s": mpi_core,
        "optuna_sqlite_trials_per_s": optuna,
        "tune_mpi_2_trials_wall_s": first(runs, "mpi_startup") and first(runs, "mpi_startup")["wall_s"],
        "ratio_in_process_vs_optuna": ratio(inproc),
        "ratio_mpi_vs_optuna": ratio(mpi),
        "ideal_s": ideal and ideal["ideal_s"],
        "ideal_wall_s": ideal and ideal["wall_s"],
        "bare_threads_wall_s": ideal and ideal["bare_threads_s"],
        "overhead_over_ideal_pct": ideal and ideal["overhead_pct"],
        "overhead_over_bare_threads_pct": ideal and ideal["overhead_vs_bare_pct"],
        "overhead_over_ideal_every_report_waiting_pct": waiting and waiting["overhead_pct"],
        "overhead_over_ideal_plain_sleeps_pct": plain and plain["overhead_pct"],
        "bare_threads_plain_sleeps_wall_s": plain and plain["bare_threads_s"],
        "report_latency_us_p50": ideal and ideal["report_us_p50"],
        "report_latency_us_p99": ideal and ideal["report_us_p99"],
        "in_report_s_per_slot": ideal and ideal["in_report_s_per_slot"],
        "outside_trials_s_per_slot": ideal and ideal["between_trials_s_per_slot"],
        "gap_between_trials_us_p50": ideal and ideal.get("gap_between_trials_us_p50"),
        "results_per_s": results,
        "results_all_durable": durable,
        "results_per_s_64_reporters": reporters["results_64"],
        "results_per_s_512_reporters": reporters["results_512"],
        "peak_rss_mib": memory and memory["peak_rss_mib"],
        "rss_before_fit_mib": memory and memory["rss_before_mib"],
        "peak_rss_core_binary_mib": memory_core and memory_core["peak_rss_mib"],
        "rss_before_fit_core_binary_mib": memory_core and memory_core["rss_before_mib"],
        "memory_trials": memory and memory["trials"],
        "store_result_own_txn_us": store and store["result_own_txn_us"],
        "store_result_in_batch_us": store and store["result_in_batch_us"],
        "store_empty_txn_us": store and store["empty_txn_us"],
    }
    goals = {
        "tune_in_process_trials_per_s": None if inproc is None else inproc >= GOALS["tune_in_process_trials_per_s"],
        "tune_mpi_trials_per_s": None if mpi is None else mpi >= GOALS["tune_mpi_trials_per_s"],
        "overhead_over_ideal_pct": None if not ideal else ideal["overhead_pct"] <= GOALS["overhead_over_ideal_pct"],
        "results_per_s": None if results is None else (results >= GOALS["results_per_s"] and durable),
    }

    if args.quick:  # sizes reduced: the goals do not apply
        goals = {k: None for k in goals}

    t = runs.get("trials", [{}])[0]
    lines = []
    lines.append("bench/run overhead%s: %d cores (%s), %s, tune %s" % (
        " --quick (sizes reduced: figures not comparable)" if args.quick else "",
        os.cpu_count() or 0, cpu_model(), platform.platform(terse=True), git_commit(root)))
    lines.append("median of %d runs where repeated; each run a fresh process and a fresh temp store" %
                 len(runs.get("trials", [])))
    if args.load:
        lines.append("load average at start %s, at end %s%s" % (
            args.load, args.load_end,
            " (busy machine: figures may be skewed)" if float(args.load.split()[0]) > 0.5 else ""))
    lines.append("")
    head = "%-52s %14s %14s %9s %11s %s"
    lines.append(head % ("figure", "tune", "Optuna 3.1", "ratio", "goal", ""))
    lines.append("-" * 108)
    n = t.get("trials", 0)
    lines.append(head % ("1. %d trivial trials, in-process, 2 slots" % n, fmt(inproc, ".0f", "/s"),
                         fmt(optuna, ".1f", "/s"), fmt(ratio(inproc), ".0f", "x"), ">= 1000/s",
                         verdict(goals["tune_in_process_trials_per_s"])))
    lines.append(head % ("1. %d trivial trials, 2 reused 1-rank MPI groups" % n, fmt(mpi, ".0f", "/s"),
                         fmt(optuna, ".1f", "/s"), fmt(ratio(mpi), ".0f", "x"), ">= 100/s",
                         verdict(goals["tune_mpi_trials_per_s"])))
    if first(runs, "mpi_startup"):
        lines.append(head % ("   start-up: wall of a 2-trial MPI sweep", fmt(first(runs, "mpi_startup")["wall_s"], ".2f", " s"),
                             "", "", "", ""))
    lines.append(head % ("   same, worker binary without libtorch (tune::core)", fmt(mpi_core, ".0f", "/s"),
                         "", fmt(ratio(mpi_core), ".0f", "x"), "", ""))
    if ideal:
        lines.append(head % ("2. %d trials x %d x %g ms on %d slots: wall" % (
            ideal["trials"], ideal["reports_per_trial"], ideal["sleep_ms"], ideal["slots"]),
            fmt(ideal["wall_s"], ".2f", " s"), "", "", "", ""))
        lines.append(head % ("   over the ideal %.1f s" % ideal["ideal_s"], fmt(ideal["overhead_pct"], "+.2f", " %"),
                             "", "", "<= 2 %", verdict(goals["overhead_over_ideal_pct"])))
        spread = summary(runs, "ideal", "overhead_pct")
        if spread["n"] > 1:
            lines.append(head % ("   (range over %d runs)" % spread["n"],
                                 "%+.2f..%+.2f %%" % (spread["min"], spread["max"]), "", "", "", ""))
        if waiting:
            lines.append(head % ("   same, every report() waiting (run_ahead off)",
                                 fmt(waiting["overhead_pct"], "+.2f", " %"), "", "", "", ""))
        if plain:
            lines.append(head % ("   same, steps as plain sleeps (bare threads %.2f s)" % plain["bare_threads_s"],
                                 fmt(plain["overhead_pct"], "+.2f", " %"), "", "", "", ""))
        lines.append(head % ("   over the same steps on bare threads (%.2f s)" % ideal["bare_threads_s"],
                             fmt(ideal["overhead_vs_bare_pct"], "+.2f", " %"), "", "", "", ""))
        lines.append(head % ("   report() round trip p50 / p99",
                             "%.0f / %.0f us" % (ideal["report_us_p50"], ideal["report_us_p99"]), "", "", "", ""))
        lines.append(head % ("   per slot: blocked in report() / outside trials",
                             "%.2f / %.2f s" % (ideal["in_report_s_per_slot"], ideal["between_trials_s_per_slot"]),
                             "", "", "", ""))
        if ideal.get("gap_between_trials_us_p50") is not None:
            lines.append(head % ("   a thread's trial end to its next trial's start, p50",
                                 "%.0f us" % ideal["gap_between_trials_us_p50"], "", "", "", ""))
    r = runs.get("results", [{}])[0]
    if r:
        lines.append(head % ("3. results/s committed, %d trials x %d reports" % (r["trials"], r["reports_per_trial"]),
                             fmt(results, ".0f", "/s"), "", "", ">= 20000/s", verdict(goals["results_per_s"])))
        for label in ("results_64", "results_512"):
            other = runs.get(label, [{}])[0]
            if other:
                lines.append(head % ("   same, %d trials x %d reports at once" % (other["trials"], other["reports_per_trial"]),
                                     fmt(reporters[label], ".0f", "/s"), "", "", "", ""))
        lines.append(head % ("   rows in results table / expected (every run)",
                             "all" if durable else "MISSING", "", "", "", ""))
    if memory:
        lines.append(head % ("4. peak RSS after %d trials (ru_maxrss)" % memory["trials"],
                             fmt(memory["peak_rss_mib"], ".1f", " MiB"), "", "", "", ""))
        lines.append(head % ("   RSS before fit() (libtorch & deps loaded)", fmt(memory["rss_before_mib"], ".1f", " MiB"),
                             "", "", "", ""))
    if memory_core:
        lines.append(head % ("   peak RSS, binary without libtorch (tune::core)",
                             fmt(memory_core["peak_rss_mib"], ".1f", " MiB"), "", "", "", ""))
        lines.append(head % ("   RSS before fit(), tune::core", fmt(memory_core["rss_before_mib"], ".1f", " MiB"),
                             "", "", "", ""))
    if store:
        lines.append(head % ("store alone: 1 result/txn, 64/txn, empty txn",
                             "%.0f/%.0f/%.0f us" % (store["result_own_txn_us"], store["result_in_batch_us"],
                                                    store["empty_txn_us"]), "", "", "", ""))
    if not trials_complete:
        lines.append("WARNING: some runs did not end with every trial TERMINATED (see runs in the JSON)")
    if optuna_run is None:
        lines.append("(Optuna peer skipped: not importable)")
    print("\n".join(lines))
    parts = parts_table(runs)

    out = {
        "benchmark": "overhead",
        "quick": bool(args.quick),
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(terse=True),
                    "loadavg_start": args.load, "loadavg_end": args.load_end},
        "tune_commit": git_commit(root),
        "optuna_version": optuna_run and optuna_run.get("version"),
        "figures": figures,
        "goals_met": goals,
        "spread": {k: summary(runs, label, key) for k, label, key in (
            ("tune_in_process_trials_per_s", "trials", "trials_per_s"),
            ("tune_mpi_trials_per_s", "mpi", "trials_per_s"),
            ("results_per_s", "results", "results_per_s"),
            ("results_per_s_64_reporters", "results_64", "results_per_s"),
            ("results_per_s_512_reporters", "results_512", "results_per_s"),
            ("overhead_over_ideal_pct", "ideal", "overhead_pct"),
            ("overhead_over_bare_threads_pct", "ideal", "overhead_vs_bare_pct"),
            ("overhead_over_ideal_plain_sleeps_pct", "ideal_plain", "overhead_pct"))},
        "runs": [dict(r, label=label) for label, rs in runs.items() for r in rs],
        "parts": parts,
    }
    print(json.dumps(out, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
