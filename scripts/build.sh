#!/usr/bin/env bash
# Installs missing Debian packages (scripts/install-deps.sh DEPS: `build` or, the default,
# `test`), then configures and builds hvdrun into BUILD_DIR (default build/): every target, or
# only BUILD_TARGETS (CMake target names separated by spaces, with what they depend on).
# Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh" "${DEPS:-test}"
target_args=()
if [ -n "${BUILD_TARGETS:-}" ]; then
  read -ra targets <<<"$BUILD_TARGETS"
  target_args=(--target "${targets[@]}")
fi
mkdir -p "$build"
# The flags are given every time (the arguments may override them), so that a tree that
# scripts/test.sh configured without debug information gets it back here.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" "$@" > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" "${target_args[@]}"
