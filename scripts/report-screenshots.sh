#!/usr/bin/env bash
# Runs each example sweep of a scheduler or search algorithm (seconds each on
# 2 cores), writes its HTML report and keeps a screenshot of the report's top
# (summary, history, learning curves, the scheduler's view) in
# docs/report-NAME.png; the README shows one. Needs a built tune and chromium.
#   scripts/report-screenshots.sh [build/tune]
set -euo pipefail
cd "$(dirname "$0")/.."
tune="${1:-build/tune}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for name in asha_stopping asha_promotion hyperband median_stopping pbt pb2 bayes tpe multi_objective; do
  file="examples/sweeps/$name.yaml"
  experiment="$(sed -n 's/^name: //p' "$file")"
  start=$SECONDS
  "$tune" run "$file" --storage "$work/store" --quiet
  "$tune" report "$experiment" --storage "$work/store" --output "$work/$name.html" >/dev/null
  mkdir -p "$work/profile-$name"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/profile-$name" --virtual-time-budget=3000 \
    --hide-scrollbars --window-size=1200,1500 --screenshot="docs/report-${name//_/-}.png" "file://$work/$name.html" 2>/dev/null
  echo "$name: $experiment in $((SECONDS - start)) s -> docs/report-${name//_/-}.png"
done
