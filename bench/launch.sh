#!/usr/bin/env bash
# Launch latency of `hvdrun -np N /bin/true` for N = 1, 2, 4, 8, 16, against a shell forking
# N /bin/true (the floor) and `mpirun -np N /bin/true` when Open MPI is installed. Runs are
# interleaved so that all tools see the same machine load; medians and minimums in ms.
# usage: bench/launch.sh [build_dir=build] [runs=20]
set -euo pipefail
build=${1:-build}
runs=${2:-20}
hvdrun="$build/hvdrun"
[ -x "$hvdrun" ] || { echo "launch.sh: $hvdrun not built" >&2; exit 1; }
have_mpirun=0
command -v mpirun >/dev/null 2>&1 && have_mpirun=1

elapsed_us() {  # runs "$@", prints its wall time in microseconds
  local t0=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || { echo "launch.sh: '$*' failed" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) ))
}
fork_loop() {
  local i
  for ((i = 0; i < $1; i++)); do /bin/true & done
  wait
}
stats() {  # stdin: microseconds, one per line -> "median min" in ms
  sort -n | awk '{a[NR] = $1} END {printf "%.2f %.2f\n", a[int((NR + 1) / 2)] / 1000, a[1] / 1000}'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# launch latency, %d runs each, ms (median [min]); ratios of medians\n' "$runs"
printf '# %4s %16s %16s %16s %14s %14s\n' N shell-floor hvdrun mpirun hvdrun/floor mpirun/hvdrun
for n in 1 2 4 8 16; do
  for ((r = 0; r < runs; r++)); do
    elapsed_us fork_loop "$n" >> "$tmp/floor.$n"
    elapsed_us "$hvdrun" -np "$n" /bin/true >> "$tmp/hvdrun.$n"
    if [ $have_mpirun = 1 ]; then
      elapsed_us mpirun --allow-run-as-root --oversubscribe -np "$n" /bin/true >> "$tmp/mpirun.$n"
    fi
  done
  read -r fm fmin < <(stats < "$tmp/floor.$n")
  read -r hm hmin < <(stats < "$tmp/hvdrun.$n")
  if [ $have_mpirun = 1 ]; then
    read -r mm mmin < <(stats < "$tmp/mpirun.$n")
    mcol=$(printf '%8s [%5s]' "$mm" "$mmin")
    mratio=$(awk -v a="$mm" -v b="$hm" 'BEGIN {printf "%.1fx", a / b}')
  else
    mcol="not installed"
    mratio="-"
  fi
  printf '  %4d %8s [%5s] %8s [%5s] %16s %14s %14s\n' "$n" "$fm" "$fmin" "$hm" "$hmin" "$mcol" \
    "$(awk -v a="$hm" -v b="$fm" 'BEGIN {printf "%.1fx", a / b}')" "$mratio"
done
