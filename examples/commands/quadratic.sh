#!/bin/sh
# A command trainable in plain sh: the config arrives as arguments (the sweep
# file's "{x}" placeholders) and each result is one `@tune {json}` line.
#   tune run examples/commands/shell.yaml
x="$1"
i=${TUNE_ITERATION:-0}
while [ "$i" -lt 10 ]; do
  i=$((i + 1))
  loss=$(awk -v x="$x" -v i="$i" 'BEGIN { printf "%.6f", (x - 2) * (x - 2) + 1 / i }')
  echo "@tune {\"loss\": $loss}"
  echo "step $i done"  # any other line is the trial's log (stdout.log)
done
