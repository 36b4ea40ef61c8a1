#!/usr/bin/env bash
# bench/run serve attack [--quick] [--seconds N]: good requests' latency
# while clients attack the server (issue 30): 8 trickling their headers with
# 500 holding connections idle, 1,000 idle, 200 reconnecting; on `tune
# serve`'s loop (tune::serve_until_signal, default options) and, as the peer
# in the same run, a cpp-httplib server with its default options. Each server
# in a process of its own on 127.0.0.1; the good client sends one-row POSTs,
# each on a new connection, 10 s per row (--quick: 3 s). Figures and method:
# bench/serve/README.md.
set -euo pipefail
# shellcheck source=bench/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
SECONDS_EACH=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) SECONDS_EACH=3 ;;
    --seconds) SECONDS_EACH="${2:?--seconds needs a number}"; shift ;;
    *) echo "bench/run serve attack: unknown option '$1' (options: --quick, --seconds N)" >&2; exit 2 ;;
  esac
  shift
done
bench_build serve_attack_bench
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD_DIR/bench/serve_attack_bench" --seconds "$SECONDS_EACH" >"${TMPDIR:-/tmp}/serve-attack.$$" || {
  rm -f "${TMPDIR:-/tmp}/serve-attack.$$"
  exit 1
}
note "load average $LOAD_START -> $(cut -d' ' -f1-3 /proc/loadavg)"
cat "${TMPDIR:-/tmp}/serve-attack.$$"
rm -f "${TMPDIR:-/tmp}/serve-attack.$$"
