#!/usr/bin/env bash
# tune as an installed package, used the way a new user would (docs/ARCHITECTURE.md, "The installed
# package"):
#   scripts/package-test.sh [BUILD_DIR]        cmake --install BUILD_DIR (default: build, already
#                                              built) into a temporary prefix, then the consumers below
#   scripts/package-test.sh --deb [BUILD_DIR]  cpack the Debian packages tune and tune-dev, install
#                                              them with apt (root; CI's fresh Debian 12), the same
#                                              consumers against /usr, then remove the packages
# The consumers, each built outside the tree against the package alone:
#   1. examples/embedded with CMake (find_package(tune), tune::tune), a C++-only project; its
#      CMakeLists.txt must be the one the README shows; run, and the installed CLI reads its store;
#   2. with libtorch: examples/trainer/ddp_custom_loop.cpp (find_package(tune COMPONENTS torch),
#      tune::torch, MPI_Comm in its headers), a C and C++ project: it links (no MPI C++ bindings
#      needed) and runs 3 trials in 2-rank MPI groups (~1.5 min, libtorch's headers; with --deb
#      only when TUNE_PACKAGE_TORCH=1: the same files as the prefix install);
#   3. examples/embedded/quadratic_tuning.cpp with pkg-config (tune.pc) and run.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
deb=0
if [ "${1:-}" = --deb ]; then deb=1; shift; fi
build=$(cd "${1:-build}" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d /tmp/tune-package-test.XXXXXX)
installed=""
cleanup() {
  if [ -n "$installed" ] && [ "${TUNE_KEEP_DEB:-0}" != 1 ]; then
    dpkg -P tune-dev tune >/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
step() { echo "== $(date +%T) $*"; }

# The README shows examples/embedded/CMakeLists.txt exactly: the first ```cmake block after the
# line naming it.
awk '/examples\/embedded\/CMakeLists.txt/ {found=1} found && /^```cmake$/ {inside=1; next}
     inside && /^```$/ {exit} inside {print}' README.md >"$tmp/readme-cmake.txt"
diff -u examples/embedded/CMakeLists.txt "$tmp/readme-cmake.txt" >&2 ||
  { echo "README.md's embedding section does not show examples/embedded/CMakeLists.txt as it is" >&2; exit 1; }

torch=0
grep -q '^TUNE_WITH_TORCH:BOOL=ON' "$build/CMakeCache.txt" && torch=1
[ $deb = 1 ] && [ "${TUNE_PACKAGE_TORCH:-0}" != 1 ] && torch=0

if [ $deb = 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "--deb installs packages: run it as root (CI)" >&2; exit 1; }
  for p in tune tune-dev; do
    if dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q 'ok installed'; then
      echo "$p is installed already; not touching it" >&2; exit 1
    fi
  done
  step "cpack (Debian packages)"
  (cd "$build" && cpack -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; exit 1; }
  ls -l "$tmp"/deb/*.deb
  step "apt-get install the packages"
  installed=1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "$tmp"/deb/tune_*.deb "$tmp"/deb/tune-dev_*.deb >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; exit 1; }
  prefix=/usr
else
  step "cmake --install $build --prefix <tmp> --strip"
  prefix=$tmp/prefix
  cmake --install "$build" --prefix "$prefix" --strip >/dev/null
  # Relocatable: no path of the build or the source tree in what was installed.
  if grep -rlI -e "$build" -e "$src" "$prefix" --exclude-dir=bin; then
    echo "the files above name the build or source tree" >&2; exit 1
  fi
  # The installed headers are complete: every "..." include of one is installed too.
  (cd "$prefix/include/tune" && grep -rhoE '^#include "[^"]+"' . | sed 's/.*"\(.*\)"/\1/' | sort -u |
    while read -r h; do [ -f "$h" ] || { echo "an installed header includes \"$h\", not installed" >&2; exit 1; }; done)
fi
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
[ $deb = 0 ] && cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix")
config_dir() { sed -n 's/^tune_DIR:PATH=//p' "$1/CMakeCache.txt"; }

step "1. examples/embedded with CMake"
cmake -S examples/embedded -B "$tmp/embedded" "${cmake_args[@]}" >"$tmp/embedded.log" 2>&1 ||
  { cat "$tmp/embedded.log"; exit 1; }
case $(config_dir "$tmp/embedded") in "$prefix"/*) ;; *) echo "found tune in $(config_dir "$tmp/embedded")" >&2; exit 1 ;; esac
cmake --build "$tmp/embedded" -j2 >>"$tmp/embedded.log" 2>&1 || { cat "$tmp/embedded.log"; exit 1; }
"$tmp/embedded/quadratic_tuning" "$tmp/results-cmake" | tee "$tmp/embedded.out"
grep -q '^trials: 30 errors: 0$' "$tmp/embedded.out"
"$prefix/bin/tune" best quadratic --storage "$tmp/results-cmake" --json >"$tmp/best.json"
grep -q '"trial_name"' "$tmp/best.json" || { cat "$tmp/best.json"; exit 1; }
# bin/tune answers queries itself and runs libexec/tune/tune-full for the rest: a sweep of 2-rank
# MPI groups through the installed CLI (tune-full, mpirun, and the listener shim found from libexec).
cat >"$tmp/branin-mpi.yaml" <<'EOF'
name: branin-mpi
trainable: branin
metric: loss
mode: min
num_samples: 2
resources: {workers: 2}
stop: {training_iteration: 2}
param_space: {x0: {uniform: [-5, 10]}, x1: {uniform: [0, 15]}}
EOF
"$prefix/bin/tune" run "$tmp/branin-mpi.yaml" --storage "$tmp/results-cli" >"$tmp/cli-run.log" 2>&1 ||
  { cat "$tmp/cli-run.log"; exit 1; }
"$prefix/bin/tune" trials branin-mpi --storage "$tmp/results-cli" --json >"$tmp/cli-trials.json"
[ "$(grep -o '"TERMINATED"' "$tmp/cli-trials.json" | wc -l)" = 2 ] || { cat "$tmp/cli-run.log" "$tmp/cli-trials.json"; exit 1; }

if [ $torch = 1 ]; then
  step "2. a tune::torch program (ddp_custom_loop) with CMake"
  mkdir -p "$tmp/ddp-src"
  cp examples/trainer/ddp_custom_loop.cpp "$tmp/ddp-src/"
  cat >"$tmp/ddp-src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(ddp_custom_loop)
find_package(tune 0.1 REQUIRED COMPONENTS torch)
add_executable(ddp_custom_loop ddp_custom_loop.cpp)
target_link_libraries(ddp_custom_loop PRIVATE tune::torch)
EOF
  cmake -S "$tmp/ddp-src" -B "$tmp/ddp" "${cmake_args[@]}" >"$tmp/ddp.log" 2>&1 || { cat "$tmp/ddp.log"; exit 1; }
  cmake --build "$tmp/ddp" -j2 >>"$tmp/ddp.log" 2>&1 || { cat "$tmp/ddp.log"; exit 1; }
  "$tmp/ddp/ddp_custom_loop" "$tmp/results-ddp" | tee "$tmp/ddp.out"
  grep -q '^best .* loss .*checkpoint' "$tmp/ddp.out"
fi

step "3. quadratic_tuning.cpp with pkg-config"
pc_path="$prefix/lib/pkgconfig"
[ -d "$pc_path" ] || pc_path=$(dirname "$(find "$prefix/lib" -name tune.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pc_path" pkg-config --cflags --libs tune)
echo "pkg-config --cflags --libs tune: $flags"
c++ -O1 -o "$tmp/quadratic_pc" examples/embedded/quadratic_tuning.cpp $flags
"$tmp/quadratic_pc" "$tmp/results-pc" | grep -q '^trials: 30 errors: 0$'

step "package test passed ($([ $deb = 1 ] && echo "Debian packages, /usr" || echo "prefix $prefix"))"
