#!/usr/bin/env bash
# Can a stranger steer a job? An elastic job of libhvdrun workers (4 x examples/train_elastic,
# --min-np 2) runs alone, then with bench/stranger.py running as uid 65534 (nobody) against its
# Horovod and rendezvous ports from the moment the workers start. Per run: the job's wall time,
# its re-formations (generations beyond the first) and resets, and whether all ranks agree;
# then the median wall time of each mode and their ratio. Needs root (to start the stranger as
# another user) and setpriv (util-linux).
# usage: bench/stranger.sh [build_dir=build] [runs=5]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
hvdrun="$build/hvdrun"
train="$build/examples/train_elastic"
for f in "$hvdrun" "$train"; do
  [ -x "$f" ] || { echo "stranger.sh: $f not built" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "stranger.sh: needs root (the stranger runs as uid 65534)" >&2; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

now() { echo "$EPOCHREALTIME"; }

# One job; $1: quiet or attacked. Prints "seconds generations resets agree".
job() {
  local mode=$1 start pid stranger=""
  rm -f "$tmp/ports"
  start=$(now)
  "$hvdrun" -np 4 --min-np 2 /bin/sh -c \
    "[ \"\$HVDRUN_SLOT\" = 0 ] && echo \"\$HOROVOD_GLOO_RENDEZVOUS_PORT \${HVDRUN_RENDEZVOUS_ADDR##*:}\" > $tmp/ports; exec \"\$@\"" \
    sh "$train" --epochs 12 --samples 8192 --step-delay-ms 5 --commit-every 5 \
    > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  if [ "$mode" = attacked ]; then
    for _ in $(seq 200); do [ -s "$tmp/ports" ] && break; sleep 0.02; done
    read -r hvd rdzv < "$tmp/ports"
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$root/bench/stranger.py" \
      127.0.0.1 "$hvd" "$rdzv" 600 > "$tmp/stranger" 2>&1 &
    stranger=$!
  fi
  wait "$pid" || true
  local took
  took=$(awk -v a="$start" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
  [ -n "$stranger" ] && kill "$stranger" 2>/dev/null && wait "$stranger" 2>/dev/null || true
  local gens resets agree
  gens=$(grep -c "^hvdrun: generation " "$tmp/err" || true)
  resets=$(grep -o "after [0-9]* resets" "$tmp/out" | awk '{print $2}' | sort -n | tail -1)
  agree=$(grep -q "all ranks agree" "$tmp/out" && echo yes || echo no)
  echo "$took $gens ${resets:-?} $agree"
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

for mode in quiet attacked; do
  : > "$tmp/$mode.times"
  for ((r = 0; r < runs; r++)); do
    read -r took gens resets agree < <(job "$mode")
    echo "$mode run $r: ${took} s, $gens re-formations, $resets resets, all agree: $agree"
    echo "$took" >> "$tmp/$mode.times"
  done
done
q=$(median < "$tmp/quiet.times")
a=$(median < "$tmp/attacked.times")
awk -v q="$q" -v a="$a" 'BEGIN {printf "median: quiet %.2f s, attacked %.2f s, ratio %.3f\n", q, a, a / q}'
python_ran=$(cat "$tmp/stranger" 2>/dev/null || true)
echo "${python_ran:-stranger: no output}"
