#!/usr/bin/env bash
# Installs hvdrun's build and test dependencies from Debian 12's repositories (needs root
# or sudo), including Debian's python3-torch for the PyTorch and Horovod compatibility tests.
# Skips apt-get entirely when everything is already installed.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  # The fuzz targets: clang with libFuzzer and the sanitizer runtimes.
  clang libclang-rt-14-dev
  libboost1.81-dev libboost-program-options1.81-dev
  libspdlog-dev libssl-dev libssh2-1-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  python3 procps iproute2 openssh-server openssh-client
  # Compatibility tests: real PyTorch, and what the prebuilt Horovod needs at run time.
  python3-torch python3-cloudpickle python3-psutil python3-yaml python3-packaging
  python3-distutils
)
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
