#!/usr/bin/env bash
# README command 2: install what is missing, then
#   1. build with GCC, warnings as errors, without debug information (it costs a third of the
#      build time; the sanitizer trees keep line tables for their reports), and run every test
#      (BUILD_DIR, default build/);
#   every tree is a unity build (HVDRUN_UNITY_BUILD) and compiles the tests' own code at -O0:
#   a fresh build in well under half the time;
#   2. build with clang under AddressSanitizer and UndefinedBehaviorSanitizer and run every
#      test again, then each fuzz target for 6 seconds over its kept corpus, in the same tree
#      (BUILD_DIR-asan; scripts/sanitize.sh, scripts/fuzz.sh);
#   3. build under ThreadSanitizer and run the rendezvous, runtime and integration tests
#      (BUILD_DIR-tsan).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
BUILD_DIR=$build "$root/scripts/build.sh" -DHVDRUN_WERROR=ON -DBUILD_TESTING=ON -DHVDRUN_UNITY_BUILD=ON \
  -DHVDRUN_WITH_NCCL="${HVDRUN_WITH_NCCL:-AUTO}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
(cd "$build" && ctest --output-on-failure --timeout 300 -j "$(nproc)")
"$root/scripts/sanitize.sh" address "$build-asan"
"$root/scripts/fuzz.sh" 6 "$build-asan"
"$root/scripts/sanitize.sh" thread "$build-tsan"
