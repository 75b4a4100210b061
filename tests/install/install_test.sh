#!/usr/bin/env bash
# usage: install_test.sh BUILD_DIR CONSUMER_SRC WORK_DIR CXX [CXXFLAGS]
# Installs BUILD_DIR into WORK_DIR/prefix, builds the consumer with find_package and with
# pkg-config, runs it alone (a world of one) and under the installed hvdrun with 3 ranks.
set -euo pipefail
build=$1 src=$2 work=$3 cxx=$4 cxxflags=${5:-}
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/hvdrun include/hvdrun/hvdrun.h include/hvdrun/error.h include/hvdrun/types.h; do
  [ -e "$prefix/$f" ] || fail "missing installed file $f"
done
libdir=$(dirname "$(find "$prefix" -name 'libhvdrun.so' | head -n 1)")
[ -n "$libdir" ] || fail "libhvdrun.so not installed"
[ -f "$libdir/cmake/hvdrun/hvdrunConfig.cmake" ] || fail "no CMake package config under $libdir/cmake/hvdrun"
[ -f "$libdir/pkgconfig/hvdrun.pc" ] || fail "no pkg-config file under $libdir/pkgconfig"

cmake -S "$src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$cxxflags" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"

PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists hvdrun || fail "pkg-config does not find hvdrun"
# shellcheck disable=SC2046,SC2086
"$cxx" $cxxflags "$src/consumer.cpp" -o "$work/consumer-pc" $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs hvdrun)

out=$("$work/cmake-build/consumer")
[ "$out" = "rank 0 of 1: sum 1" ] || fail "alone: unexpected output '$out'"
out=$(LD_LIBRARY_PATH="$libdir" "$work/consumer-pc")
[ "$out" = "rank 0 of 1: sum 1" ] || fail "pkg-config build alone: unexpected output '$out'"

out=$("$prefix/bin/hvdrun" -np 3 "$work/cmake-build/consumer" | sort)
expected=$'[0]<stdout>:rank 0 of 3: sum 6\n[1]<stdout>:rank 1 of 3: sum 6\n[2]<stdout>:rank 2 of 3: sum 6'
[ "$out" = "$expected" ] || fail "under hvdrun: unexpected output '$out'"
[ -x "$prefix/bin/hvdrun-preflight" ] || fail "bin/hvdrun-preflight not installed"
"$prefix/bin/hvdrun" -np 2 --preflight-only true 2> "$work/preflight.err" ||
  fail "hvdrun --preflight-only failed: $(cat "$work/preflight.err")"
grep -q "localhost  ok    ok" "$work/preflight.err" || fail "no preflight table: $(cat "$work/preflight.err")"
echo "install_test: installed package works (find_package, pkg-config, hvdrun -np 3, --preflight-only)"
