#!/usr/bin/env bash
# Simulated scale of per-node starts: NODES node agents (plain `hvdrun --nnodes ... --node-rank I`
# processes on this machine standing in for hosts) and node 0's launcher, each node running
# PER_NODE workers of /bin/true. Node 0 starts once every agent waits for it. Prints node 0's
# time from its start to its exit, its CPU time and peak RSS (per host), and its --verbose
# figure of the event loop's longest stall. The agents run at nice 19: on real hosts they
# would not take node 0's CPU, here they share its cores.
# usage: bench/per_node_scale.sh [build_dir=build] [nodes=256] [per_node=1]
set -euo pipefail
build=${1:-build}
nodes=${2:-256}
per_node=${3:-1}
hvdrun="$(cd "$build" && pwd)/hvdrun"
[ -x "$hvdrun" ] || { echo "per_node_scale.sh: $hvdrun not built" >&2; exit 1; }
tmp=$(mktemp -d)
agents=()
cleanup() {
  for p in "${agents[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "secret-of-the-scale-bench" > "$tmp/secret"
common=(--nnodes "$nodes" --nproc-per-node "$per_node" --rdzv-endpoint "127.0.0.1:$port"
        --rdzv-secret-file "$tmp/secret")
for ((i = 1; i < nodes; i++)); do
  nice -n 19 "$hvdrun" "${common[@]}" --node-rank "$i" /bin/true > /dev/null 2> "$tmp/agent.$i" &
  agents+=($!)
done
# Every agent says it waits for the launcher before node 0 starts.
for _ in $(seq 600); do
  waiting=$(grep -l "waiting for the launcher" "$tmp"/agent.* 2>/dev/null | wc -l)
  [ "$waiting" -ge $((nodes - 1)) ] && break
  sleep 0.1
done
/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$hvdrun" --verbose "${common[@]}" --node-rank 0 \
  /bin/true > /dev/null 2> "$tmp/node0" || { tail -5 "$tmp/node0" >&2; exit 1; }
read -r wall user sys rss < "$tmp/time"
for p in "${agents[@]}"; do wait "$p" || true; done
agents=()
stall=$(grep -o "event loop: .*" "$tmp/node0" | tail -1)
awk -v n="$nodes" -v k="$per_node" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" 'BEGIN {
  printf "%d nodes x %d workers: node 0 ran %.2f s, CPU %.2f s, peak RSS %.1f MB (%.1f KB per node)\n",
         n, k, w, u + s, m / 1024, m / n }'
echo "node 0: $stall"
