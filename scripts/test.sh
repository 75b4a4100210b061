#!/usr/bin/env bash
# README command 2: install what is missing, build with warnings as errors, run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
BUILD_DIR=$build "$root/scripts/build.sh" -DHVDRUN_WERROR=ON -DBUILD_TESTING=ON
cd "$build"
ctest --output-on-failure --timeout 300 -j "$(nproc)"
