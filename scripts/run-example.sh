#!/usr/bin/env bash
# README command 1: install what building needs (scripts/install-deps.sh build), configure
# BUILD_DIR (default build/) without the tests (BUILD_TESTING=OFF), build only hvdrun
# (hvdrun_cli), libhvdrun (hvdrun_runtime) and the example (train), and run the example
# training job on 4 local processes with the CPU backend: BUILD_DIR/hvdrun -np 4
# BUILD_DIR/examples/train. Extra arguments go to train. The CPU example needs no CUDA: the
# NCCL backend is built only when HVDRUN_WITH_NCCL (AUTO or ON) asks for it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
BUILD_DIR=$build DEPS=build BUILD_TARGETS="hvdrun_cli hvdrun_runtime train" \
  "$root/scripts/build.sh" -DBUILD_TESTING=OFF -DHVDRUN_UNITY_BUILD=ON \
  -DHVDRUN_WITH_NCCL="${HVDRUN_WITH_NCCL:-OFF}"
exec "$build/hvdrun" -np 4 "$build/examples/train" "$@"
