#!/usr/bin/python3
"""Runs one shipped example sweep the way a user would, in a scratch store.

  check_example.py --tune BUILD/tune --mode dry-run FILE
      `tune run FILE --dry-run` exits 0, prints the plan (trials, search, scheduler, resources,
      stop criteria) and creates nothing: the sweep file, its trainable, its data and its
      search and scheduler options are valid.
  check_example.py --tune BUILD/tune --mode smoke FILE
      `tune run FILE --smoke` runs end to end (a couple of trials, two results each) into a
      scratch store; every trial TERMINATED with results, and `tune best` answers.

Exit status 0 when it holds, 1 (with what failed) when not, also when the example needs
something this machine lacks (--needs-python-module NAME not importable: scripts/install-deps.sh
--for test installs it; nothing is skipped).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_S = 300  # a smoke run of the slowest example that is smoked takes well under a minute


def run(args, cwd):
    proc = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=TIMEOUT_S)
    return proc.returncode, proc.stdout


def fail(message, output=""):
    print(f"check_example: FAILED: {message}")
    if output:
        print(output.rstrip())
    sys.exit(1)


def dry_run(tune, sweep, scratch):
    storage = os.path.join(scratch, "store")
    code, out = run([tune, "run", sweep, "--dry-run", "--storage", storage], scratch)
    if code != 0:
        fail(f"`tune run {sweep} --dry-run` exited {code}", out)
    for line in ("dry run of", "trials", "search", "scheduler", "resources", "stop"):
        if line not in out:
            fail(f"the plan has no '{line}' line", out)
    if os.path.exists(storage):
        fail(f"--dry-run created {storage}", out)
    print(out.rstrip())


def smoke(tune, sweep, scratch):
    storage = os.path.join(scratch, "store")
    code, out = run([tune, "run", sweep, "--smoke", "--quiet", "--storage", storage], scratch)
    print(out.rstrip())
    if code != 0:
        fail(f"`tune run {sweep} --smoke` exited {code}", out)
    code, out = run([tune, "experiments", "--storage", storage, "--json"], scratch)
    if code != 0:
        fail("tune experiments failed", out)
    experiments = json.loads(out)
    if len(experiments) != 1:
        fail(f"expected one experiment in the store, found {len(experiments)}", out)
    name = experiments[0]["name"]
    code, out = run([tune, "trials", name, "--storage", storage, "--json"], scratch)
    if code != 0:
        fail(f"tune trials {name} failed", out)
    trials = json.loads(out)
    if not trials:
        fail(f"{name} has no trials")
    for trial in trials:
        if trial.get("status") != "TERMINATED" or not trial.get("iteration"):
            fail(f"{name}: {trial.get('trial_name')} is {trial.get('status')} after "
                 f"{trial.get('iteration')} results: {trial.get('error')}", out)
    code, out = run([tune, "best", name, "--storage", storage], scratch)
    if code != 0:
        fail(f"tune best {name} failed", out)
    print(f"check_example: {name}: {len(trials)} trials TERMINATED; tune best answers")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tune", required=True)
    parser.add_argument("--mode", choices=["dry-run", "smoke"], required=True)
    parser.add_argument("--needs-python-module")
    parser.add_argument("sweep")
    args = parser.parse_args()
    if args.needs_python_module:
        probe = subprocess.run(["/usr/bin/python3", "-c", f"import {args.needs_python_module}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode != 0:
            print(f"check_example: needs the Python module {args.needs_python_module} for /usr/bin/python3 "
                  "(scripts/install-deps.sh --for test installs it)")
            sys.exit(1)
    scratch = tempfile.mkdtemp(prefix="tune-example-")
    try:
        sweep = os.path.abspath(args.sweep)
        if args.mode == "dry-run":
            dry_run(os.path.abspath(args.tune), sweep, scratch)
        else:
            smoke(os.path.abspath(args.tune), sweep, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
