#!/usr/bin/env bash
# README command 2: install what is missing, build with warnings as errors, run every test,
# then each fuzz target for 10 seconds over its kept corpus (scripts/fuzz.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
BUILD_DIR=$build "$root/scripts/build.sh" -DHVDRUN_WERROR=ON -DBUILD_TESTING=ON
cd "$build"
ctest --output-on-failure --timeout 300 -j "$(nproc)"
"$root/scripts/fuzz.sh" 10 "$build-fuzz"
