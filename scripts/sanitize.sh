#!/usr/bin/env bash
# Builds hvdrun with clang under a sanitizer and runs tests in that tree:
#   address  AddressSanitizer and UndefinedBehaviorSanitizer (with leak checks), every test.
#            The tree also carries the libFuzzer instrumentation, so that scripts/fuzz.sh can
#            build its targets there instead of in a tree of their own.
#   thread   ThreadSanitizer: the rendezvous, runtime and integration tests (what runs
#            threads: the server's and the client's, the ring's, the launcher's console).
# A report fails the test it happens in: every sanitizer halts at its first report, and a report
# in hvdrun or a worker changes that process's exit status, which the tests check. Reports need
# only line tables (-gline-tables-only), not full debug information, which costs a third of a
# sanitized build.
# usage: scripts/sanitize.sh address|thread [build_dir=build-KIND]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
case $kind in
  address)
    flags=(-DHVDRUN_SANITIZE=address,undefined -DHVDRUN_FUZZ=ON)
    targets=(all)
    labels=""
    ;;
  thread)
    flags=(-DHVDRUN_SANITIZE=thread)
    targets=(rendezvous_tests worker_runtime_tests integration_tests train)
    labels="rendezvous|runtime|integration"
    ;;
  *)
    echo "sanitize.sh: unknown kind '$kind' (address or thread)" >&2
    exit 2
    ;;
esac
build=${2:-$root/build-$kind}
"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  # -O1: sanitizer reports keep their frames, and the build stays quick.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DHVDRUN_WERROR=ON -DBUILD_TESTING=ON -DHVDRUN_UNITY_BUILD=ON "${flags[@]}" > "$build/configure.log" 2>&1 \
    || { cat "$build/configure.log" >&2; exit 1; }
fi
ninja -C "$build" "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
cd "$build"
ctest --output-on-failure --timeout 600 -j "$(nproc)" ${labels:+-L "$labels"}
