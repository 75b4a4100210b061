#!/usr/bin/env bash
# Installs hvdrun's dependencies from Debian 12's repositories (needs root or sudo):
#   scripts/install-deps.sh build   what building hvdrun, libhvdrun, the examples and the
#                                   benchmark programs needs (BUILD_TESTING=OFF): the
#                                   compiler, CMake, Ninja, Boost, spdlog, OpenSSL, libssh2,
#                                   yaml-cpp;
#   scripts/install-deps.sh [test]  that, plus what the tests and the fuzzers need: clang and
#                                   its sanitizer runtimes, GoogleTest, OpenSSH (the test
#                                   hosts), Slurm and MUNGE, and Debian's python3-torch with what the prebuilt
#                                   Horovod needs, for the PyTorch and Horovod compatibility tests.
# Skips apt-get entirely when everything is already installed.
set -euo pipefail
set_name=${1:-test}
build_packages=(
  cmake ninja-build g++ pkg-config
  libboost1.81-dev libboost-program-options1.81-dev
  libspdlog-dev libssl-dev libssh2-1-dev libyaml-cpp-dev
)
test_packages=(
  # The fuzz targets and the sanitizer trees: clang with libFuzzer and the sanitizer runtimes.
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev
  python3 procps iproute2 openssh-server openssh-client
  # Hang forensics: native stacks (eu-stack); the timeline's picture (scripts/timeline_png.py).
  elfutils python3-matplotlib
  # Slurm: the host-list tests compare with `scontrol show hostnames`; the Slurm tests run a
  # real slurmctld and slurmd nodes (scripts/slurm-test-cluster.sh).
  slurm-wlm munge
  # Compatibility tests: real PyTorch, and what the prebuilt Horovod needs at run time.
  python3-torch python3-cloudpickle python3-psutil python3-yaml python3-packaging
  python3-distutils
)
case $set_name in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *)
    echo "install-deps.sh: unknown set '$set_name' (build or test)" >&2
    exit 2
    ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
