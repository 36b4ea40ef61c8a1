#!/usr/bin/python3
"""Runs the shell blocks of a Markdown document as a user would: a renamed flag or file fails.

  scripts/run-doc-commands.py DOC.md [--build BUILD] [--list] [--keep] [--timeout S]

Every ```sh / ```bash / ```shell block of DOC.md runs, in document order, in one scratch folder
(later blocks see what earlier ones made, as in a user's shell) that holds `build` (a link to
BUILD, default ./build) and links to the source tree's `examples`, `scripts` and `docs`, with
BUILD first on PATH (so `tune` and `build/tune` both work). Each block is one `bash -e -o
pipefail` script in its own process group, killed with everything it left running (a
`tune serve ... &`) when it ends or after --timeout seconds (default 300).

`tune run FILE` lines run as `tune run FILE --smoke` (a couple of trials of two results each,
into the same storage and experiment name), so a long example sweep costs seconds and the
commands after it find the experiment.

An HTML comment on the line(s) just above a block steers it (invisible on GitHub):
  <!-- doc-test: skip: REASON -->       not run (a cluster, an illustration, covered elsewhere):
                                        REASON says which
  <!-- doc-test: as-written -->         `tune run` lines are run as written (no --smoke)
  <!-- doc-test: needs: COMMAND -->     run only when COMMAND succeeds, else reported skipped
  <!-- doc-test: setup: COMMAND -->     COMMAND runs first, unseen by readers (data a block queries)
  <!-- doc-test: expect: REGEX -->      the block's output must match REGEX (Python re, multiline)
Several may be given, one a comment.

--list prints each block with its line and directives, runs nothing. Exit status 0 when every
block that ran passed, 1 otherwise (each failure with the block's output), 2 on bad usage.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(skip|as-written|needs|setup|expect)\s*(?::\s*(.*?))?\s*-->\s*$")
TUNE_RUN = re.compile(r"^(\s*(?:build/)?tune run )(.*)$")


class Block:
    def __init__(self, line, text, directives):
        self.line = line
        self.text = text
        self.directives = directives  # [(kind, argument)]

    def directive(self, kind):
        return [arg for k, arg in self.directives if k == kind]


def parse(path):
    """The shell blocks of a Markdown file, with the directives just above each."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            if lines[i].startswith("```"):  # another language's block: skip it whole
                i += 1
                while i < len(lines) and not lines[i].startswith("```"):
                    i += 1
            i += 1
            continue
        directives, j = [], i - 1
        while j >= 0 and lines[j].startswith("<!--"):
            m = DIRECTIVE.match(lines[j])
            if not m:
                raise SystemExit(f"{path}:{j + 1}: not a doc-test directive: {lines[j]}")
            if m.group(1) in ("skip", "needs", "setup", "expect") and not m.group(2):
                raise SystemExit(f"{path}:{j + 1}: doc-test: {m.group(1)} needs an argument")
            directives.insert(0, (m.group(1), m.group(2) or ""))
            j -= 1
        start, i = i + 1, i + 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}:{start}: unterminated code block")
        blocks.append(Block(start, "\n".join(lines[start:i]), directives))
        i += 1
    return blocks


def split_comment(line):
    """(command, ' # comment') of a shell line: the first # outside quotes after a blank."""
    quote = None
    for k, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or line[k - 1] in " \t"):
            return line[:k].rstrip(), "  " + line[k:]
    return line, ""


def smoke_form(text):
    """Every `tune run ...` line with --smoke added (before its comment)."""
    out = []
    for line in text.splitlines():
        m = TUNE_RUN.match(line)
        if m and "--smoke" not in line:
            command, comment = split_comment(line)
            line = command + " --smoke" + comment
        out.append(line)
    return "\n".join(out)


def scratch_folder(source, build, parent=None):
    scratch = tempfile.mkdtemp(prefix="tune-doc-", dir=parent)
    os.symlink(build, os.path.join(scratch, "build"))
    for name in ("examples", "scripts", "docs"):
        os.symlink(os.path.join(source, name), os.path.join(scratch, name))
    return scratch


def run_script(script, scratch, env, timeout):
    """(exit status or None on timeout, output); kills the script's whole process group.

    Output goes to a file, not a pipe: a server the block started in the background keeps
    its stdout open, and the block ends when bash does, not when the server does."""
    with tempfile.TemporaryFile(mode="w+") as output:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=scratch, env=env,
                                stdout=output, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        for sig in (signal.SIGTERM, signal.SIGKILL):  # what the block left running (servers)
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        proc.wait()
        output.seek(0)
        return code, output.read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("doc")
    parser.add_argument("--build", default="build")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--scratch-in", default=None,
                        help="make the scratch folder here, not in the system's temp folder "
                             "(docs/CLUSTER.md: the namespace hosts have a /tmp of their own)")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    blocks = parse(args.doc)
    name = os.path.basename(args.doc)
    if args.list:
        for b in blocks:
            print(f"{name}:{b.line}: {'; '.join(k + (': ' + a if a else '') for k, a in b.directives) or 'run'}")
            print("    " + b.text.replace("\n", "\n    "))
        return 0
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args.build)
    if not os.access(os.path.join(build, "tune"), os.X_OK):
        print(f"run-doc-commands: no tune program in {build} (build it: scripts/build.sh)", file=sys.stderr)
        return 2
    env = dict(os.environ, PATH=build + os.pathsep + os.environ.get("PATH", ""),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    scratch = scratch_folder(source, build, args.scratch_in)
    failed = ran = 0
    try:
        for b in blocks:
            where = f"{name}:{b.line}"
            if b.directive("skip"):
                print(f"{where}: skipped: {b.directive('skip')[0]}")
                continue
            unmet = [c for c in b.directive("needs") if run_script(c, scratch, env, 60)[0] != 0]
            if unmet:
                print(f"{where}: skipped: needs `{unmet[0]}`, which fails here")
                continue
            script = b.text if b.directive("as-written") else smoke_form(b.text)
            script = "\n".join(b.directive("setup") + [script])
            started = time.monotonic()
            code, out = run_script(script, scratch, env, args.timeout)
            ran += 1
            took = time.monotonic() - started
            missing = [r for r in b.directive("expect") if not re.search(r, out, re.MULTILINE)]
            if code == 0 and not missing:
                print(f"{where}: ok ({took:.1f} s)")
                continue
            failed += 1
            why = f"timed out after {args.timeout:.0f} s" if code is None else f"exit status {code}"
            if code == 0:
                why = f"its output does not match `{missing[0]}`"
            print(f"{where}: FAILED ({why}); the block as run:\n    " + script.replace("\n", "\n    "))
            print("  its output:\n    " + out.rstrip().replace("\n", "\n    "))
    finally:
        if args.keep:
            print(f"run-doc-commands: scratch folder kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"run-doc-commands: {name}: {ran} blocks run, {failed} failed, {len(blocks) - ran} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
