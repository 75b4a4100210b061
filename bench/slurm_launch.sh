#!/usr/bin/env bash
# Launch latency inside a Slurm allocation: `hvdrun PROG` (hosts and slots from the
# allocation, one node agent per node started by one srun step) against `srun PROG` starting
# the same 32 tasks itself, PROG = /bin/true, on a 4-node test cluster
# (scripts/slurm-test-cluster.sh up 4 8: 8 CPUs a node; needs root and Debian's slurm-wlm). Both
# run in turn inside one `salloc -N4 -n32`, so neither pays for the allocation; medians and
# minimums in ms, and their ratio.
# usage: bench/slurm_launch.sh [build_dir=build] [runs=10]
# Brings the cluster up (replacing one that exists) and takes it down at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
runs=${2:-10}
[ -x "$build/hvdrun" ] || { echo "slurm_launch.sh: $build/hvdrun not built" >&2; exit 1; }
"$root/scripts/slurm-test-cluster.sh" up 4 8 >/dev/null
trap '"$root/scripts/slurm-test-cluster.sh" down >/dev/null 2>&1 || true' EXIT
export SLURM_CONF=/tmp/hvds-slurm/slurm.conf

# Inside the allocation: alternate the two, print "srun_ms hvdrun_ms" per run.
inner=$(mktemp)
cat >"$inner" <<'INNER'
set -eu
for ((i = 0; i < RUNS; i++)); do
  a=$EPOCHREALTIME
  srun -N4 -n32 --overlap /bin/true 2>/dev/null
  b=$EPOCHREALTIME
  "$HVDRUN" /bin/true 2>/dev/null
  c=$EPOCHREALTIME
  awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%.1f %.1f\n", (b - a) * 1000, (c - b) * 1000 }'
done
INNER
results=$(RUNS=$runs HVDRUN="$build/hvdrun" salloc -N4 -n32 bash "$inner" 2>/dev/null)
rm -f "$inner"
stats() {  # column -> "median [min]"
  echo "$results" | awk -v col="$1" '{ print $col }' | sort -n |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                              printf "%.1f [%.1f]", m, v[1] }'
}
median() { stats "$1" | awk '{ print $1 }'; }
echo "# launch of 32 tasks on 4 Slurm nodes inside one allocation, $runs runs, ms (median [min])"
echo "# srun -N4 -n32 /bin/true     hvdrun /bin/true     hvdrun/srun"
printf "  %-26s %-20s %.2fx\n" "$(stats 1)" "$(stats 2)" \
  "$(awk -v a="$(median 1)" -v b="$(median 2)" 'BEGIN { print b / a }')"
