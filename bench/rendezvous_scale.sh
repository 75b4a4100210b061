#!/usr/bin/env bash
# The rendezvous at scale (bench/rendezvous_scale_bench.cpp): 4,096, 16,384 and 65,536
# simulated workers, held by one client process, join one rendezvous server (the launcher's
# own, in a process of its own) and receive their assignments. For each size: the median
# [min max] over RUNS of the time from the start to the last assignment received, the time
# at which the server saw the generation complete, the server's CPU time until then, its
# resident memory per worker, and the CPU time of the simulated workers (on the same cores).
# The bench raises the open-file limit itself; a size the limit does not allow is reported
# and skipped (65,536 needs a hard limit above 65,800).
#
# Beside it, run for run, the peer: the same rendezvous over PyTorch's TCPStore
# (bench/tcpstore_rendezvous.py, 2 client processes), and the ratio of the medians. Sizes
# above PEER_MAX (default 4096: its server polls every connection for each request, 16 s for
# 4,096 workers here and about 16 times that for 16,384) skip the peer; PEER_MAX=0 skips it.
# usage: bench/rendezvous_scale.sh [build_dir=build] [runs=5] [sizes="4096 16384 65536"]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
sizes=${3:-4096 16384 65536}
peer_max=${PEER_MAX:-4096}
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/bench/rendezvous_scale_bench"
[ -x "$bench" ] || { echo "rendezvous_scale.sh: $bench not built" >&2; exit 1; }
if [ "$peer_max" -gt 0 ] && ! /usr/bin/python3 -c 'import torch.distributed' 2> /dev/null; then
  echo "rendezvous_scale.sh: no peer (apt-get install python3-torch)" >&2
  peer_max=0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in $sizes; do
  : > "$tmp/rows"
  : > "$tmp/peer"
  for ((r = 0; r < runs; r++)); do
    if ! "$bench" "$n" >> "$tmp/rows" 2> "$tmp/err"; then
      echo "workers $n: not measured: $(tail -n 1 "$tmp/err")"
      continue 2
    fi
    if [ "$n" -le "$peer_max" ] &&
      ! timeout 1200 /usr/bin/python3 "$here/tcpstore_rendezvous.py" "$n" 2 >> "$tmp/peer" 2> "$tmp/err"; then
      echo "workers $n: peer not measured: $(tail -n 1 "$tmp/err")"
      : > "$tmp/peer"
      peer_max=0
    fi
  done
  /usr/bin/python3 - "$tmp/rows" "$tmp/peer" <<'PY'
import statistics, sys
def load(path):
    rows = []
    for line in open(path):
        w = line.split()
        rows.append(dict(zip(w[0::2], map(float, w[1::2]))))
    return rows
def median(rows, key):
    return statistics.median(r[key] for r in rows)
def show(rows, key, unit):
    v = sorted(r[key] for r in rows)
    return "%.0f [%.0f %.0f] %s" % (statistics.median(v), v[0], v[-1], unit)
rows, peer = load(sys.argv[1]), load(sys.argv[2])
print("workers %6d (%d runs): last assignment %s; server: complete %s, CPU %s, memory %s; "
      "simulated workers' CPU %s" % (
    rows[0]["workers"], len(rows), show(rows, "last_assignment_ms", "ms"),
    show(rows, "server_complete_ms", "ms"), show(rows, "server_cpu_ms", "ms"),
    show(rows, "server_bytes_per_worker", "bytes/worker"), show(rows, "clients_cpu_ms", "ms")))
if peer:
    print("        TCPStore peer: last assignment %s; server: CPU %s, memory %s; "
          "simulated workers' CPU %s" % (
        show(peer, "last_assignment_ms", "ms"), show(peer, "server_cpu_ms", "ms"),
        show(peer, "server_bytes_per_worker", "bytes/worker"),
        show(peer, "clients_cpu_ms", "ms")))
    print("        hvdrun / TCPStore: time %.3f, server CPU %.3f, server memory %.3f" % tuple(
        median(rows, k) / median(peer, k)
        for k in ("last_assignment_ms", "server_cpu_ms", "server_bytes_per_worker")))
PY
done
