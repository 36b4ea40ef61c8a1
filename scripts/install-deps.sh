#!/usr/bin/env bash
# Installs tune's build, test and benchmark dependencies from Debian 12 packages.
# Idempotent: skips apt when everything is already installed.
set -euo pipefail
packages=(
  build-essential cmake g++ pkg-config
  libtorch-dev libopenmpi-dev openmpi-bin zlib1g-dev
  # Debian's libtorch does its float matrix products through whatever
  # libblas.so.3 is selected; without this it is the reference BLAS, and a
  # small CNN trains ~3x slower (bench/ddp). The OpenMP build follows
  # torch::set_num_threads, so ranks do not oversubscribe cores.
  libopenblas0-openmp
  libsqlite3-dev sqlite3 libsqlitecpp-dev
  libyaml-cpp-dev libboost-program-options-dev
  nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev googletest librapidcheck-dev libbenchmark-dev
  libeigen3-dev libnlopt-cxx-dev
  # multi-host: the token handshake (HMAC-SHA256), checkpoint checksums (XXH3)
  libssl-dev libxxhash-dev
  # the xgboost trainable (trainer/xgboost); tune serve's HTTP server (cpp-httplib)
  libxgboost-dev libcpp-httplib-dev
  # bench/run serve: HTTP load generators
  wrk apache2-utils
  # multi-host tests: namespace hosts (ip, ss, unshare, nsenter)
  iproute2 util-linux
  # Slurm tests: a real Slurm on this machine (scripts/local-slurm.sh)
  munge slurmctld slurmd slurm-client
  dataset-fashion-mnist
  # The HTML report's end-to-end tests render it in headless Chromium.
  chromium
  # Sanitizer builds and libFuzzer targets (scripts/sanitize.sh, bench/run fuzz)
  clang-14 libclang-rt-14-dev
)
if [ "${TUNE_WITH_PEERS:-0}" = 1 ]; then
  packages+=(python3-optuna python3-plotly python3-torch)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
