#!/usr/bin/env bash
# A relocatable copy of a build for a machine that lacks the build's packages (a GPU node with
# only the driver, CUDA and NCCL): hvdrun, libhvdrun, the example, the benchmarks and the GPU
# test programs, stripped, in the build tree's layout, with the shared libraries they need in
# DEST/lib. Not copied: the C library family (libc, libm, libstdc++, libgcc_s, the loader),
# the CUDA driver and NCCL, which the target machine provides (its NCCL must be 2.14 or later).
# usage: scripts/bundle.sh [build_dir=build] [dest=build/bundle]
# then, on the target: LD_LIBRARY_PATH=DEST/lib:<dir of libnccl.so.2> DEST/hvdrun -np 1 ...
set -euo pipefail
build=${1:-build}
dest=${2:-$build/bundle}
[ -x "$build/hvdrun" ] || { echo "bundle.sh: $build/hvdrun not built" >&2; exit 2; }

programs=(hvdrun hvdrun-preflight examples/train bench/allreduce_bench bench/nccl_bench
          tests/gpu/gpu_collectives_check tests/gpu/gpu_nccl_error_paths)
scripts=(bench/nccl.sh tests/gpu/train_gpu_test.sh tests/gpu/preflight_gpu_test.sh
         tests/gpu/gpu_node_check.sh)
provided='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libnccl|libcuda)\.so'

rm -rf "$dest"
mkdir -p "$dest/lib"
copy_libs_of() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $provided ]] && continue
    [ -e "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name"
  done
}
for program in "${programs[@]}"; do
  [ -x "$build/$program" ] || continue  # the GPU programs exist only in NCCL builds
  mkdir -p "$dest/$(dirname "$program")"
  strip --strip-debug -o "$dest/$program" "$build/$program"
  copy_libs_of "$build/$program"
done
library=$(readlink -f "$build/worker-runtime/libhvdrun.so")
strip --strip-debug -o "$dest/lib/libhvdrun.so.0" "$library"
copy_libs_of "$library"
src=$(cd "$(dirname "$0")/.." && pwd)
for script in "${scripts[@]}"; do
  mkdir -p "$dest/$(dirname "$script")"
  cp "$src/$script" "$dest/$script"
done
du -sh "$dest" | awk -v d="$dest" '{print "bundle.sh: " d " (" $1 ")"}'
