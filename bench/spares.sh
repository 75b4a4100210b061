#!/usr/bin/env bash
# Back to full size after a failure: a warm spare against a cold replacement, beside torchrun's
# restart of the world, measured in the same run.
#   Each worker starts as a PyTorch worker does: `/usr/bin/python3 -c 'import torch'` first
#   (the start cost), then bench/elastic_bench (libhvdrun). 4 workers, --min-np 4 --max-np 4;
#   the worker with key 3 SIGKILLs itself after 300 steps (T_FAIL).
#   spare: -H localhost:5 --spares 1; the spare started with the job and waits in init().
#   cold:  --blacklist-cooldown-range 0 0: the replacement starts on the freed slot at once and
#          the survivors wait for it in the forming generation.
#   Figure: T_FAIL to the last worker's first allreduce completed at 4 ranks again (T_FULL).
#   torchrun: ../shared/peers/elastic_probe.py (2 workers of torch.distributed; one exits 1;
#   torchrun restarts both: failure to the re-formed gloo group), --monitor_interval=0.1.
# Timestamps are the workers' own wall clocks on this machine. Medians [min max] in ms.
# usage: bench/spares.sh [build_dir=build] [runs=5]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
hvdrun="$build/hvdrun"
worker="$(cd "$(dirname "$build/bench/elastic_bench")" && pwd)/elastic_bench"
peers="$(cd "$(dirname "$0")/../.." && pwd)/shared/peers"
for f in "$hvdrun" "$worker"; do
  [ -x "$f" ] || { echo "spares.sh: $f not built" >&2; exit 1; }
done
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "spares.sh: /usr/bin/python3 has no torch (apt-get install python3-torch)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 -c 'import time; t = time.monotonic(); import torch
print(f"# start cost: import torch took {time.monotonic() - t:.2f} s here")'

run() {  # name, run, hvdrun flags...
  local name=$1 r=$2
  shift 2
  "$hvdrun" -np 4 --min-np 4 --max-np 4 "$@" \
    /bin/sh -c '/usr/bin/python3 -c "import torch" && exec "$@"' sh \
    "$worker" "$tmp/$name.$r" --kill-key 3 --kill-after 300 --steps 1500 --step-us 2000 --full 4 \
    > /dev/null 2> "$tmp/$name.$r.log" || {
    echo "spares.sh: $name run $r failed:" >&2; tail -5 "$tmp/$name.$r.log" >&2; exit 1; }
}
for ((r = 0; r < runs; r++)); do
  echo "# run $r: with a spare, then a cold replacement"
  run spare "$r" -H localhost:5 --spares 1 --blacklist-cooldown-range 3600 3600
  run cold "$r" --blacklist-cooldown-range 0 0
done

torch_line=""
if [ -f "$peers/elastic_probe.py" ]; then
  echo "# torchrun restart ($runs runs)"
  torch_line=$(SCR="$tmp" /usr/bin/python3 "$peers/elastic_probe.py" "$runs" --monitor_interval=0.1 |
    grep 'RECOVERY' || true)
fi

/usr/bin/python3 - "$tmp" "$runs" "$torch_line" <<'PY'
import re, statistics, sys
tmp, runs, torch_line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def back_to_full(path):
    fail, full = None, []
    for line in open(path):
        m = re.match(r"(\w+) key=(-?\d+) resets=(\d+) t=([\d.]+)", line)
        if not m: continue
        if m[1] == "T_FAIL": fail = float(m[4])
        if m[1] == "T_FULL": full.append(float(m[4]))
    if fail is None or len(full) < 4:
        sys.exit(f"spares.sh: {path}: no failure or fewer than 4 ranks back at full size")
    return sorted(full)[3] - fail  # the 4th: every rank did its allreduce at 4 ranks
def show(name, values):
    v = sorted(values)
    print(f"{name:38s} {statistics.median(v) * 1e3:8.1f} ms  [{v[0] * 1e3:.1f} {v[-1] * 1e3:.1f}]  (n={len(v)})")
    return statistics.median(v)
print("# from SIGKILL of 1 of 4 workers to all 4 ranks' first allreduce at full size again")
spare = show("hvdrun with a warm spare", [back_to_full(f"{tmp}/spare.{r}") for r in range(runs)])
cold = show("hvdrun, cold replacement", [back_to_full(f"{tmp}/cold.{r}") for r in range(runs)])
print(f"cold / spare: {cold / spare:.1f}x")
m = re.search(r"median ([\d.]+)s\s+min ([\d.]+)\s+max ([\d.]+)", torch_line)
if m:
    torch = float(m[1])
    print(f"{'torchrun restart (2 workers, group back)':38s} {torch * 1e3:8.1f} ms  [{float(m[2]) * 1e3:.1f} {float(m[3]) * 1e3:.1f}]")
    print(f"torchrun / spare: {torch / spare:.1f}x")
PY
