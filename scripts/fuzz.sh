#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with AddressSanitizer and UndefinedBehavior-
# Sanitizer) and runs each for SECONDS over its kept corpus fuzz/corpus/<target> (read only;
# new inputs go to BUILD/corpus/<target>). Prints each target's executions; exits non-zero
# on the first crash, leak or sanitizer report (the input is saved under BUILD/crashes).
# usage: scripts/fuzz.sh [seconds=60] [build_dir=build-fuzz]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${2:-$root/build-fuzz}
targets=(rendezvous_codec agent_codec host_lists cli horovod_http horovod_registration)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHVDRUN_FUZZ=ON -DHVDRUN_SANITIZE=address,undefined \
    -DHVDRUN_WITH_NCCL=OFF -DBUILD_TESTING=OFF >/dev/null
fi
ninja -C "$build" "${targets[@]/#/fuzz_}" >/dev/null
mkdir -p "$build/crashes"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/fuzz_$t.log"
  if ! "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$build/crashes/$t-" \
      "$build/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz.sh: fuzz_$t failed; the input is in $build/crashes/" >&2
    exit 1
  fi
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  echo "fuzz.sh: fuzz_$t: $runs inputs in ${seconds} s, no crash"
done
