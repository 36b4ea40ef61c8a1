#!/usr/bin/env bash
# A compiler launcher (CMAKE_CXX_COMPILER_LAUNCHER) for scripts/build-profile.sh:
#   cpu-time.sh LOG COMPILER ARGS...
# runs the compiler and appends "CPU_SECONDS<TAB>OUTPUT" (user + system time of the
# compiler and its children) to LOG. CPU time, not wall time: other work on the machine
# slows a compile down without changing it much.
log="$1"
shift
out=""
prev=""
for arg in "$@"; do
  [ "$prev" = -o ] && out="$arg"
  prev="$arg"
done
times_file=$(mktemp)
status=0
/usr/bin/time -f "%U %S" -o "$times_file" "$@" || status=$?
read -r user sys <"$times_file" || true
rm -f "$times_file"
awk -v u="${user:-0}" -v s="${sys:-0}" -v o="$out" 'BEGIN { printf "%.2f\t%s\n", u + s, o }' >>"$log"
exit $status
