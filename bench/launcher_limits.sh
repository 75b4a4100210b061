#!/usr/bin/env bash
# The launcher at the limits the docs state: how long it takes to act, and how long a SIGINT
# takes to end it, with
#   1. a discovery script that prints as many hosts as its 1 MiB cap allows (about 75,000:
#      one local, the rest remote addresses that a job on loopback cannot use),
#   2. -np 65536 against an open-file limit of 1024 (refused before any worker starts),
#   3. a host file of 1 MiB (localhost first, then remote entries no rank reaches).
# Each job runs with --verbose, whose last line gives the event loop's longest stall (an empty
# handler posted every 10 ms, timed until it runs), printed here per scenario.
# Hosts are numeric addresses: a name would cost a DNS lookup each, which is what this machine's
# resolver is being measured for, not hvdrun. Prints seconds per scenario; no peer runs these.
# usage: bench/launcher_limits.sh [build_dir=build]
set -euo pipefail
build=${1:-build}
hvdrun="$(cd "$build" && pwd)/hvdrun"
[ -x "$hvdrun" ] || { echo "launcher_limits.sh: $hvdrun not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'; }

# Starts hvdrun --verbose "$@" in the background with its stderr in $tmp/err; waits until its
# worker printed "ready" (at most 120 s), SIGINTs it, and prints "<ready s> <sigint-to-exit s>".
ready_then_sigint() {
  local out=$tmp/out err=$tmp/err start pid t1
  : >"$out"
  start=$(now)
  "$hvdrun" --verbose "$@" >"$out" 2>"$err" &
  pid=$!
  for ((i = 0; i < 2400; i++)); do
    grep -q ready "$out" && break
    sleep 0.05
  done
  local ready
  ready=$(since "$start")
  sleep 2  # a few discovery runs
  t1=$(now)
  kill -INT "$pid"
  wait "$pid" || true
  echo "$ready $(since "$t1")"
}

# The event loop's figure from the last job's --verbose output.
loop_stall() { grep -o "event loop: .*" "$tmp/err" | tail -1; }

# Prints FIRST, then "10.A.B.C<SUFFIX>" lines while the whole stays under 1,040,000 bytes.
host_lines() {
  awk -v first="$1" -v suffix="$2" 'BEGIN { print first; bytes = length(first) + 1
    for (a = 0; a < 64; a++) for (b = 0; b < 256; b++) for (c = 1; c <= 254; c++) {
      line = "10." a "." b "." c suffix; bytes += length(line) + 1
      if (bytes > 1040000) exit
      print line } }'
}

# 1. Discovered hosts: localhost, then remote addresses up to just under the 1 MiB cap.
host_lines localhost:1 :1 >"$tmp/hosts"
lines=$(wc -l <"$tmp/hosts")
bytes=$(wc -c <"$tmp/hosts")
read -r ready stop < <(ready_then_sigint -np 1 --min-np 1 --host-discovery-script "cat $tmp/hosts" \
  --discovery-interval 0.5 /bin/sh -c 'echo ready; exec sleep 600')
warnings=$(grep -c "are remote but" "$tmp/err" || true)
echo "discovery of $lines hosts ($bytes bytes): worker running after $ready s; SIGINT to exit $stop s; $warnings warning line(s); $(loop_stall)"

# 2. -np 65536 against ulimit -n 1024.
start=$(now)
(ulimit -n 1024 && "$hvdrun" -np 65536 /bin/true >/dev/null 2>"$tmp/err") || true
echo "-np 65536 under ulimit -n 1024: refused after $(since "$start") s: $(grep -m1 "error" "$tmp/err" | head -c 160)"

# 3. A host file of just under 1 MiB: localhost first (its two slots take both ranks).
host_lines "localhost slots=2" " slots=1" >"$tmp/hostfile"
lines=$(wc -l <"$tmp/hostfile")
bytes=$(wc -c <"$tmp/hostfile")
read -r ready stop < <(ready_then_sigint -np 2 --hostfile "$tmp/hostfile" \
  /bin/sh -c 'echo ready; exec sleep 600')
echo "host file of $lines lines ($bytes bytes): workers running after $ready s; SIGINT to exit $stop s; $(loop_stall)"
