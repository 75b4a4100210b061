#!/usr/bin/env bash
# Multi-node launch latency on the sshd test hosts (scripts/test-hosts.sh; needs root):
# `hvdrun -np 2K -H hvdt-h1:2,...,hvdt-hK:2 /bin/true` against the OpenSSH client starting the
# same number of remote processes in parallel (`ssh h1 true & ssh h1 true & ssh h2 true ...;
# wait`), for K = 1, 2, 4, 8 hosts. K = 2 is the `-np 4 -H h1:2,h2:2` case. Runs are
# interleaved so both sides see the same load; medians and minimums in ms.
# Both sides pay the remote login shell's start-up (e.g. ~/.bashrc) once per process.
# Then 4 hosts x 16 processes, where sshd's defaults (MaxStartups 10:30:100) drop some of 64
# parallel connections: hvdrun against the OpenSSH loop (its failed clients counted), and
# against one OpenSSH client a host starting that host's 16 processes (what hvdrun's one agent
# a host does); and the time to all joined (libhvdrun workers, hvdrun's --verbose line) of
# 4 x 16 remote ranks against 64 local ones.
# usage: bench/ssh_launch.sh [build_dir=build] [runs=10]
# Brings up 8 test hosts (replacing any that exist) and takes them down at the end.
set -euo pipefail
build=${1:-build}
runs=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=$(realpath "$build/hvdrun")
[ -x "$hvdrun" ] || { echo "ssh_launch.sh: $hvdrun not built" >&2; exit 1; }
hosts_script="$here/scripts/test-hosts.sh"
export HVDRUN_TEST_HOSTS_DIR=${HVDRUN_TEST_HOSTS_DIR:-/tmp/hvdrun-bench-hosts}
state=$HVDRUN_TEST_HOSTS_DIR

tmp=$(mktemp -d)
cleanup() { "$hosts_script" down >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
"$hosts_script" up 8 >/dev/null

# hvdrun's HOME: the test hosts' ssh config, key and known_hosts; no agent.
mkdir -p "$tmp/home/.ssh"
cp "$state/ssh_config" "$tmp/home/.ssh/config"
cp "$state/known_hosts" "$tmp/home/.ssh/known_hosts"
cp "$state/id_ed25519" "$tmp/home/.ssh/id_ed25519"
chmod 700 "$tmp/home/.ssh"

elapsed_us() {  # runs "$@", prints its wall time in microseconds
  local t0=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || { echo "ssh_launch.sh: '$*' failed" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) ))
}
run_hvdrun() {  # K hosts, 2 slots each
  local k=$1 list="" i
  for ((i = 1; i <= k; i++)); do list+="${list:+,}hvdt-h$i:2"; done
  HOME="$tmp/home" SSH_AUTH_SOCK= "$hvdrun" -np $((2 * k)) -H "$list" /bin/true
}
ssh_loop() {  # K hosts, 2 OpenSSH clients each, in parallel
  local k=$1 i
  for ((i = 1; i <= k; i++)); do
    ssh -F "$state/ssh_config" "hvdt-h$i" true &
    ssh -F "$state/ssh_config" "hvdt-h$i" true &
  done
  wait
}
stats() {  # stdin: microseconds, one per line -> "median min" in ms
  sort -n | awk '{a[NR] = $1} END {printf "%.1f %.1f\n", a[int((NR + 1) / 2)] / 1000, a[1] / 1000}'
}
bashrc_ms() {  # bash run as sshd runs it (SSH_CLIENT set: it reads ~/.bashrc) vs. plainly
  local with without
  with=$(for _ in 1 2 3 4 5; do elapsed_us env SSH_CLIENT='10.213.0.1 1 22' SHLVL=0 bash -c true; done | stats)
  without=$(for _ in 1 2 3 4 5; do elapsed_us bash -c true; done | stats)
  echo "${with%% *} ${without%% *}"
}

printf '# multi-node launch latency, %d runs each, ms (median [min]); 2 processes per host\n' "$runs"
printf '# %5s %5s %16s %16s %12s\n' hosts procs openssh-loop hvdrun hvdrun/ssh
for k in 1 2 4 8; do
  for ((r = 0; r < runs; r++)); do
    elapsed_us ssh_loop "$k" >> "$tmp/ssh.$k"
    elapsed_us run_hvdrun "$k" >> "$tmp/hvdrun.$k"
  done
  read -r sm smin < <(stats < "$tmp/ssh.$k")
  read -r hm hmin < <(stats < "$tmp/hvdrun.$k")
  ratio=$(awk -v a="$hm" -v b="$sm" 'BEGIN {printf "%.2fx", a / b}')
  printf '  %5d %5d %8s [%5s] %8s [%5s] %12s\n' "$k" $((2 * k)) "$sm" "$smin" "$hm" "$hmin" "$ratio"
done
# 4 hosts x 16 processes.
ssh_loop_16() {  # 64 OpenSSH clients in parallel; prints how many failed
  local i j failed=0 pids=()
  for ((i = 1; i <= 4; i++)); do
    for ((j = 0; j < 16; j++)); do
      ssh -F "$state/ssh_config" "hvdt-h$i" true 2>/dev/null &
      pids+=($!)
    done
  done
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  echo "$failed"
}
ssh_per_host_16() {  # 4 OpenSSH clients, each starting its host's 16 processes
  local i
  for ((i = 1; i <= 4; i++)); do
    ssh -F "$state/ssh_config" "hvdt-h$i" 'for j in $(seq 16); do /bin/true & done; wait' &
  done
  wait
}
run_hvdrun_16() {
  HOME="$tmp/home" SSH_AUTH_SOCK= "$hvdrun" -np 64 -H hvdt-h1:16,hvdt-h2:16,hvdt-h3:16,hvdt-h4:16 \
    /bin/true
}
joined_ms() {  # "all N ranks joined the rendezvous, X ms after start" of hvdrun --verbose "$@"
  HOME="$tmp/home" SSH_AUTH_SOCK= "$hvdrun" --verbose "$@" 2>&1 >/dev/null |
    sed -n 's/.*ranks joined the rendezvous, \([0-9.]*\) ms after start.*/\1/p'
}
init_worker=$(realpath "$build/tests/integration/hvdrun_test_init_worker")
: > "$tmp/fail16"
for ((r = 0; r < runs; r++)); do
  t0=$EPOCHREALTIME
  ssh_loop_16 >> "$tmp/fail16"
  t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) )) >> "$tmp/ssh16"
  elapsed_us ssh_per_host_16 >> "$tmp/sshhost16"
  elapsed_us run_hvdrun_16 >> "$tmp/hvdrun16"
  joined_ms -np 64 -H hvdt-h1:16,hvdt-h2:16,hvdt-h3:16,hvdt-h4:16 "$init_worker" >> "$tmp/join_remote"
  joined_ms -np 64 "$init_worker" >> "$tmp/join_local"
done
read -r sm smin < <(stats < "$tmp/ssh16")
read -r pm pmin < <(stats < "$tmp/sshhost16")
read -r hm hmin < <(stats < "$tmp/hvdrun16")
failed=$(awk '{s += $1} END {print s}' "$tmp/fail16")
printf '# 4 hosts x 16 processes, %d runs each, ms (median [min])
' "$runs"
printf '  OpenSSH loop, 64 clients:        %8s [%5s]  (%d of %d clients failed)
' "$sm" "$smin" \
  "$failed" $((64 * runs))
printf '  OpenSSH, one client a host:      %8s [%5s]
' "$pm" "$pmin"
printf '  hvdrun -np 64:                   %8s [%5s]  %s of the loop, %s of one client a host
' \
  "$hm" "$hmin" "$(awk -v a="$hm" -v b="$sm" 'BEGIN {printf "%.2fx", a / b}')" \
  "$(awk -v a="$hm" -v b="$pm" 'BEGIN {printf "%.2fx", a / b}')"
jr=$(awk '{print $1 * 1000}' "$tmp/join_remote" | stats)
jl=$(awk '{print $1 * 1000}' "$tmp/join_local" | stats)
printf '  all joined, 4 x 16 remote: %s ms; 64 local: %s ms (median [min]); remote/local %s
' \
  "${jr% *} [${jr#* }]" "${jl% *} [${jl#* }]" \
  "$(awk -v a="${jr% *}" -v b="${jl% *}" 'BEGIN {printf "%.2fx", a / b}')"
read -r rc norc < <(bashrc_ms)
printf '# remote login shell start-up on each side, per process: bash as sshd starts it %s ms, ' "$rc"
printf 'plain bash -c true %s ms\n' "$norc"
