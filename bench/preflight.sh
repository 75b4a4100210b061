#!/usr/bin/env bash
# Preflight's own time on the sshd test hosts (scripts/test-hosts.sh; needs root): 4 hosts x 2
# slots, `hvdrun --preflight-only` (8 probes: program, GPUs, a 0.3 s matrix product, each
# host's allreduce among its probes, each host's link, an allreduce across all; with
# --preflight-slack 60, as the tests use: the 4 test hosts share this machine's cores, which
# makes the CPU figures vary by more than the default 20 %) against launching the same 8 ranks of /bin/true, which
# pays the same connections; runs interleaved, medians [min max] in ms. Then once with host 2's
# link shaped by tc to 50 Mbit/s: the table that names it.
# usage: bench/preflight.sh [build_dir=build] [runs=5]
# Brings up 4 test hosts (replacing any that exist) and takes them down at the end.
set -euo pipefail
build=${1:-build}
runs=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=$(realpath "$build/hvdrun")
[ -x "$hvdrun" ] && [ -x "$(dirname "$hvdrun")/hvdrun-preflight" ] ||
  { echo "preflight.sh: $hvdrun or hvdrun-preflight beside it not built" >&2; exit 1; }
hosts_script="$here/scripts/test-hosts.sh"
export HVDRUN_TEST_HOSTS_DIR=${HVDRUN_TEST_HOSTS_DIR:-/tmp/hvdrun-bench-hosts}
state=$HVDRUN_TEST_HOSTS_DIR
tmp=$(mktemp -d)
cleanup() { "$hosts_script" down >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
"$hosts_script" up 4 >/dev/null
mkdir -p "$tmp/home/.ssh"
cp "$state/ssh_config" "$tmp/home/.ssh/config"
cp "$state/known_hosts" "$tmp/home/.ssh/known_hosts"
cp "$state/id_ed25519" "$tmp/home/.ssh/id_ed25519"
chmod 700 "$tmp/home/.ssh"
hosts=hvdt-h1:2,hvdt-h2:2,hvdt-h3:2,hvdt-h4:2

elapsed_ms() {  # runs "$@", prints its wall time in ms
  local t0=$EPOCHREALTIME
  HOME="$tmp/home" "$@" >/dev/null 2>"$tmp/err" || {
    echo "preflight.sh: '$*' failed:" >&2; tail -5 "$tmp/err" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) / 1000 ))
}
pre=() launch=()
for ((r = 0; r < runs; r++)); do
  pre+=("$(elapsed_ms "$hvdrun" -np 8 -H "$hosts" --preflight-only --preflight-slack 60 true)")
  launch+=("$(elapsed_ms "$hvdrun" -np 8 -H "$hosts" true)")
done
/usr/bin/python3 - "${pre[*]}" "${launch[*]}" <<'PY'
import statistics, sys
pre, launch = ([int(x) for x in a.split()] for a in sys.argv[1:3])
def show(name, v):
    v = sorted(v)
    print(f"{name:44s} {statistics.median(v):7.0f} ms  [{v[0]} {v[-1]}]  (n={len(v)})")
show("hvdrun --preflight-only, 4 hosts x 2 slots", pre)
show("hvdrun -np 8 true on the same hosts", launch)
print(f"preflight / launch: {statistics.median(pre) / statistics.median(launch):.1f}x")
PY
echo "# host 2's link shaped to 50 Mbit/s:"
ip netns exec hvdt2 tc qdisc replace dev eth0 root tbf rate 50mbit burst 64kb latency 50ms
HOME="$tmp/home" "$hvdrun" -np 8 -H "$hosts" --preflight-only --preflight-slack 60 true 2>&1 | sed 's/^hvdrun: //' || true
