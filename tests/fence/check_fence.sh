#!/usr/bin/env bash
# The public-header fence (docs/ARCHITECTURE.md): usage: check_fence.sh BUILD_DIR
#  1. every header under BUILD_DIR/include includes only other public headers,
#     the standard library and nlohmann/json (tune::torch's headers may also
#     include <mpi.h> and libtorch);
#  2. a program linking tune::tune cannot include an internal header.
set -u
build=$1
include=$build/include
status=0
count=$(find "$include" -name '*.h' 2>/dev/null | wc -l)
# The fence has something to check: the installed API's headers are there.
if [ "$count" -lt 10 ]; then
  echo "FENCE: only $count public headers under $include (is BUILD_DIR a configured build?)"
  exit 1
fi
while IFS= read -r header; do
  rel=${header#"$include"/}
  torch=0
  case $rel in trainer/torch/* | trainer/communicator.h) torch=1 ;; esac
  while IFS= read -r line; do
    target=$(sed -E 's/^#include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$line")
    if [[ $line == *'"'* ]]; then
      [ -f "$include/$target" ] || { echo "FENCE: $rel includes non-public \"$target\""; status=1; }
      continue
    fi
    case $target in
      nlohmann/*) ;;
      mpi.h | torch/* | ATen/*) [ $torch = 1 ] || { echo "FENCE: $rel includes <$target>"; status=1; } ;;
      */* | *.h | *.hpp) echo "FENCE: $rel includes <$target>"; status=1 ;;
      *) ;;  # the standard library (no extension, no directory)
    esac
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$header")
done < <(find "$include" -name '*.h' | sort)

out=$(cmake --build "$build" --target fence_violation 2>&1)
if [ $? -eq 0 ]; then
  echo "FENCE: a tune::tune program compiled with storage/internal/statements.h"
  status=1
elif ! grep -qE "storage/internal/statements.h(: No such file or directory|' file not found)" <<<"$out"; then  # gcc, clang
  echo "FENCE: fence_violation failed for another reason:"; echo "$out" | tail -5
  status=1
fi
[ $status = 0 ] && echo "fence ok: $(find "$include" -name '*.h' | wc -l) public headers"
exit $status
