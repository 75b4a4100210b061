#!/usr/bin/env bash
# Allreduce bus bandwidth of hvdrun's TCP backend on 2 local ranks, 4 KiB to 256 MiB
# float32, side by side with Open MPI's TCP transport (shared/peers/mpi_allreduce_bench.c)
# when mpicc/mpirun are installed, and single-thread memcpy bandwidth as the ceiling.
# usage: bench/allreduce.sh [build_dir=build] [seconds_per_size=1.0] [peers_dir=../shared/peers]
set -euo pipefail
build=${1:-build}
sec=${2:-1.0}
peers=${3:-../shared/peers}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/hvdrun" -np 2 "$build/bench/allreduce_bench" "$sec" > "$tmp/hvdrun.raw"
sed 's/^\[0\]<stdout>://' "$tmp/hvdrun.raw" > "$tmp/hvdrun.txt"
echo "== hvdrun TCP ring, 2 ranks"
cat "$tmp/hvdrun.txt"

have_mpi=0
if command -v mpicc >/dev/null 2>&1 && [ -f "$peers/mpi_allreduce_bench.c" ]; then
  mpicc -O2 "$peers/mpi_allreduce_bench.c" -o "$tmp/mpi_allreduce_bench"
  mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo \
    "$tmp/mpi_allreduce_bench" "$sec" > "$tmp/mpi.txt"
  echo "== Open MPI TCP, 2 ranks"
  cat "$tmp/mpi.txt"
  have_mpi=1
fi
if [ -f "$peers/mem_bw.c" ]; then
  cc -O2 "$peers/mem_bw.c" -o "$tmp/mem_bw" && "$tmp/mem_bw" 256 5
fi
if [ $have_mpi = 1 ]; then
  echo "== ratio hvdrun / Open MPI (best busbw, median time)"
  printf '# %11s %12s %12s %10s %12s\n' bytes hvdrun_GB/s mpi_GB/s bw_ratio time_ratio
  awk '!/^#/ && NF >= 7 {
         if (FNR == NR) { hb[$1] = $7; ht[$1] = $3; next }
         if ($1 in hb) printf "  %11s %12s %12s %9.2fx %11.2fx\n", $1, hb[$1], $7, hb[$1] / $7, $3 / ht[$1]
       }' "$tmp/hvdrun.txt" "$tmp/mpi.txt"
fi
