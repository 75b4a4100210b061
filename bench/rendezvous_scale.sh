#!/usr/bin/env bash
# The rendezvous at scale (bench/rendezvous_scale_bench.cpp): 4,096, 16,384 and 65,536
# simulated workers, held by one client process, join one rendezvous server (the launcher's
# own, in a process of its own) and receive their assignments. For each size: the median
# [min max] over RUNS of the time from the start to the last assignment received, the time
# at which the server saw the generation complete, the server's CPU time until then, its
# resident memory per worker, and the CPU time of the simulated workers (on the same cores).
# The bench raises the open-file limit itself; a size the limit does not allow is reported
# and skipped (65,536 needs a hard limit above 65,800).
# usage: bench/rendezvous_scale.sh [build_dir=build] [runs=5] [sizes="4096 16384 65536"]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
sizes=${3:-4096 16384 65536}
bench="$build/bench/rendezvous_scale_bench"
[ -x "$bench" ] || { echo "rendezvous_scale.sh: $bench not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in $sizes; do
  : > "$tmp/rows"
  for ((r = 0; r < runs; r++)); do
    if ! "$bench" "$n" >> "$tmp/rows" 2> "$tmp/err"; then
      echo "workers $n: not measured: $(tail -n 1 "$tmp/err")"
      continue 2
    fi
  done
  /usr/bin/python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    w = line.split()
    rows.append(dict(zip(w[0::2], map(float, w[1::2]))))
def show(key, unit):
    v = sorted(r[key] for r in rows)
    return "%.0f [%.0f %.0f] %s" % (statistics.median(v), v[0], v[-1], unit)
print("workers %6d (%d runs): last assignment %s; server: complete %s, CPU %s, memory %s; "
      "simulated workers' CPU %s" % (
    rows[0]["workers"], len(rows), show("last_assignment_ms", "ms"),
    show("server_complete_ms", "ms"), show("server_cpu_ms", "ms"),
    show("server_bytes_per_worker", "bytes/worker"), show("clients_cpu_ms", "ms")))
PY
done
