#!/usr/bin/env bash
# Installs tune's dependencies from Debian 12 packages, only as many as asked for:
#
#   scripts/install-deps.sh --for demo    building and running tune (scripts/demo.sh):
#                                         compilers, CMake, Ninja, ccache and the libraries
#   scripts/install-deps.sh [--for test]  + what the test suite needs (scripts/test.sh, CI):
#                                         GoogleTest, rapidcheck, Fashion-MNIST, Chromium,
#                                         clang + sanitizer runtimes, Slurm, namespace tools
#   scripts/install-deps.sh --for bench   + what bench/run needs (HTTP load generators,
#                                         Google Benchmark); TUNE_WITH_PEERS=1 adds the
#                                         Python peers (Optuna, Plotly, PyTorch)
#
# Idempotent: skips apt when everything is already installed. Needs root, or sudo.
set -euo pipefail

for_what=test
while [ $# -gt 0 ]; do
  case "$1" in
    --for) for_what="${2:-}"; shift 2 || true ;;
    --for=*) for_what="${1#--for=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: scripts/install-deps.sh [--for demo|test|bench]" >&2; exit 2 ;;
  esac
done
case "$for_what" in
  demo|test|bench) ;;
  *) echo "scripts/install-deps.sh: --for takes demo, test or bench, got '$for_what'" >&2; exit 2 ;;
esac

demo=(
  build-essential cmake g++ pkg-config ninja-build ccache
  libtorch-dev libopenmpi-dev openmpi-bin zlib1g-dev
  # Debian's libtorch does its float matrix products through whatever
  # libblas.so.3 is selected; without this it is the reference BLAS, and a
  # small CNN trains ~3x slower (bench/ddp). The OpenMP build follows
  # torch::set_num_threads, so ranks do not oversubscribe cores.
  libopenblas0-openmp
  libsqlite3-dev sqlite3 libsqlitecpp-dev
  libyaml-cpp-dev libboost-program-options-dev
  nlohmann-json3-dev libfmt-dev
  libeigen3-dev libnlopt-cxx-dev
  # multi-host: the token handshake (HMAC-SHA256), checkpoint checksums (XXH3)
  libssl-dev libxxhash-dev
  # the xgboost trainable (trainer/xgboost); tune serve's HTTP server (cpp-httplib)
  libxgboost-dev libcpp-httplib-dev
)
test=(
  libgtest-dev libgmock-dev googletest librapidcheck-dev
  # the Fashion-MNIST examples and trainer tests; the README's curl commands (tests/docs)
  dataset-fashion-mnist curl python3
  # examples/commands/fashion_ddp_*.yaml run a PyTorch DDP script (example.smoke.*)
  python3-torch
  # multi-host tests: namespace hosts (ip, ss, unshare, nsenter)
  iproute2 util-linux
  # cluster.secret_never_travels captures the cluster network
  tcpdump
  # a store on a FUSE mount, as on a network filesystem (NetworkStore.*)
  bindfs
  # Slurm tests: a real Slurm on this machine (scripts/local-slurm.sh)
  munge slurmctld slurmd slurm-client
  # The HTML report's end-to-end tests render it in headless Chromium.
  chromium
  # Sanitizer builds and libFuzzer targets (scripts/sanitize.sh, bench/run fuzz)
  clang-14 libclang-rt-14-dev
)
bench=(
  libbenchmark-dev
  # bench/run serve: HTTP load generators
  wrk apache2-utils
  # bench/run overhead's instructions per part, bench/overhead/instructions.sh (callgrind)
  valgrind
)

packages=("${demo[@]}")
[ "$for_what" = demo ] || packages+=("${test[@]}")
[ "$for_what" = bench ] && packages+=("${bench[@]}")
if [ "${TUNE_WITH_PEERS:-0}" = 1 ]; then
  packages+=(python3-optuna python3-plotly python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "scripts/install-deps.sh: ${#missing[@]} Debian packages are missing and installing them needs root;" \
      "run this script as root, or install sudo, or ask an administrator to run:" >&2
    echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo)
  echo "scripts/install-deps.sh: installing ${#missing[@]} Debian packages with sudo (it may ask for your password)" >&2
fi
echo "scripts/install-deps.sh: apt-get install ${#missing[@]} packages (--for $for_what): ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
