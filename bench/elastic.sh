#!/usr/bin/env bash
# Elastic recovery and growth of hvdrun, beside torchrun's restart measured in the same run.
#   recovery: 4 workers of bench/elastic_bench, one SIGKILLs itself; from its T_FAIL stamp to
#     the last survivor's first completed allreduce of the re-formed generation of 3, split into
#     detection (the last survivor's pending collective fails), re-formation (until it has
#     its assignment: every survivor re-joined), ring rebuild, and the first allreduce.
#   growth: 3 workers on a --host-discovery-script (polled every 0.1 s) giving localhost:3;
#     the hosts file changes to localhost:4; from that change to the newcomer's first
#     completed allreduce (it was started, joined, took the state and the ring).
#   torchrun: ../shared/peers/elastic_probe.py (2 workers; one exits 1; torchrun restarts
#     both; failure to the re-formed gloo group), with --monitor_interval=0.1.
# Timestamps are the workers' own wall clocks on this machine. Medians [min max] in ms.
# usage: bench/elastic.sh [build_dir=build] [runs=10]
set -euo pipefail
build=${1:-build}
runs=${2:-10}
hvdrun="$build/hvdrun"
worker="$build/bench/elastic_bench"
peers="$(cd "$(dirname "$0")/../.." && pwd)/shared/peers"
for f in "$hvdrun" "$worker"; do
  [ -x "$f" ] || { echo "elastic.sh: $f not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# hvdrun recovery: kill 1 of 4 workers ($runs runs)"
for ((r = 0; r < runs; r++)); do
  HVDRUN_LOG_LEVEL=info "$hvdrun" -np 4 --min-np 3 --blacklist-cooldown-range 3600 3600 \
    "$worker" "$tmp/recovery.$r" --kill-key 3 --kill-after 300 --steps 1200 --step-us 500 \
    > /dev/null 2> "$tmp/recovery.$r.log" || {
    echo "elastic.sh: recovery run $r failed:" >&2; tail -5 "$tmp/recovery.$r.log" >&2; exit 1; }
done

echo "# hvdrun growth: localhost:3 -> localhost:4 in the discovery output ($runs runs)"
for ((r = 0; r < runs; r++)); do
  echo localhost:3 > "$tmp/hosts.$r"
  "$hvdrun" -np 3 --max-np 4 --host-discovery-script "cat $tmp/hosts.$r" \
    --discovery-interval 0.1 "$worker" "$tmp/growth.$r" --initial 3 --steps 3000 --step-us 500 \
    > /dev/null 2> "$tmp/growth.$r.log" &
  job=$!
  sleep 1
  echo "T_CHANGE key=-1 resets=0 t=$EPOCHREALTIME" >> "$tmp/growth.$r"
  echo localhost:4 > "$tmp/hosts.$r.new" && mv "$tmp/hosts.$r.new" "$tmp/hosts.$r"
  wait $job || { echo "elastic.sh: growth run $r failed:" >&2; tail -5 "$tmp/growth.$r.log" >&2; exit 1; }
done

torch_line=""
if /usr/bin/python3 -c 'import torch' 2>/dev/null && [ -f "$peers/elastic_probe.py" ]; then
  echo "# torchrun restart ($runs runs)"
  torch_line=$(SCR="$tmp" /usr/bin/python3 "$peers/elastic_probe.py" "$runs" --monitor_interval=0.1 |
    grep 'RECOVERY' || true)
else
  echo "# torchrun: /usr/bin/python3 has no torch (apt-get install python3-torch); no peer figure"
fi

/usr/bin/python3 - "$tmp" "$runs" "$torch_line" <<'PY'
import re, statistics, sys
tmp, runs, torch_line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def stamps(path):
    out = []
    for line in open(path):
        m = re.match(r"(\w+) key=(-?\d+) resets=(\d+) t=([\d.]+)", line)
        if m: out.append((m[1], int(m[2]), int(m[3]), float(m[4])))
    return out
def show(name, values):
    v = sorted(values)
    print(f"{name:34s} {statistics.median(v) * 1e3:8.1f} ms  [{v[0] * 1e3:.1f} {v[-1] * 1e3:.1f}]  (n={len(v)})")
split = {k: [] for k in ("detection", "re-formation", "ring", "first", "total")}
for r in range(runs):
    s = stamps(f"{tmp}/recovery.{r}")
    fail = next(t for n, k, _, t in s if n == "T_FAIL")
    abort = max(t for n, k, _, t in s if n == "T_ABORT")
    first = max(t for n, k, _, t in s if n == "T_FIRST")
    reset = max(t for n, k, _, t in s if n == "T_RESET")
    # The runtime's "ready in" lines: the first 4 are generation 0, the rest the re-formation.
    ready = re.findall(r"ready in (\d+) us: assignment after (\d+) us, ring in (\d+) us",
                       open(f"{tmp}/recovery.{r}.log").read())[4:]
    ring = max(int(x[2]) for x in ready) / 1e6
    split["detection"].append(abort - fail)
    split["ring"].append(ring)
    split["re-formation"].append(reset - abort - ring)
    split["first"].append(first - reset)
    split["total"].append(first - fail)
print("# recovery, from SIGKILL of 1 of 4 workers (median [min max])")
show("  detection (all survivors aborted)", split["detection"])
show("  re-formation (re-join, assignment)", split["re-formation"])
show("  ring rebuild", split["ring"])
show("  first allreduce", split["first"])
show("hvdrun RECOVERY total", split["total"])
growth = []
for r in range(runs):
    s = stamps(f"{tmp}/growth.{r}")
    change = next(t for n, k, _, t in s if n == "T_CHANGE")
    growth.append(next(t for n, k, _, t in s if n == "T_NEW_FIRST") - change)
show("hvdrun GROWTH (change -> newcomer's allreduce)", growth)
m = re.search(r"median ([\d.]+)s\s+min ([\d.]+)\s+max ([\d.]+)", torch_line)
if m:
    torch = float(m[1])
    print(f"{'torchrun RECOVERY (restart)':34s} {torch * 1e3:8.1f} ms  [{float(m[2]) * 1e3:.1f} {float(m[3]) * 1e3:.1f}]")
    print(f"torchrun / hvdrun recovery: {torch / statistics.median(split['total']):.1f}x")
PY
