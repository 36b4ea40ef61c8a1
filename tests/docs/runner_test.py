#!/usr/bin/python3
"""scripts/run-doc-commands.py's own checks: a block's exit status and its `expect:` directive."""
import os
import subprocess
import sys
import tempfile

RUNNER, BUILD = sys.argv[1], sys.argv[2]


def run(markdown):
    with tempfile.TemporaryDirectory() as folder:
        doc = os.path.join(folder, "DOC.md")
        with open(doc, "w") as f:
            f.write(markdown)
        p = subprocess.run([sys.executable, RUNNER, doc, "--build", BUILD, "--timeout", "30"],
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr


FENCE = "```"
cases = [
    # (markdown, wanted exit status, text the report must hold)
    (f"<!-- doc-test: expect: ^host a +drained -->\n{FENCE}sh\nprintf 'host a   drained\\n'\n{FENCE}\n", 0, ": ok ("),
    (f"<!-- doc-test: expect: ^host a +drained -->\n{FENCE}sh\nprintf 'host a   active\\n'\n{FENCE}\n", 1,
     "does not match `^host a +drained`"),
    (f"{FENCE}sh\nexit 3\n{FENCE}\n", 1, "exit status 3"),
    (f"<!-- doc-test: expect -->\n{FENCE}sh\ntrue\n{FENCE}\n", 1, "expect needs an argument"),
]
failures = 0
for markdown, status, text in cases:
    code, out = run(markdown)
    if code != status or text not in out:
        failures += 1
        print(f"FAIL: wanted status {status} and {text!r}, got {code}:\n{out}\n--- for:\n{markdown}")
print(f"runner_test: {len(cases) - failures}/{len(cases)} passed")
sys.exit(1 if failures else 0)
