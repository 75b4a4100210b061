#!/usr/bin/env bash
# Hang forensics: (1) the bookkeeping each collective pays for the stall report (progress_bench),
# and with every collective timed for --timeline-collectives, against the 4 KiB allreduce
# latency of 2 local ranks measured in the same run; (2) the time
# hvdrun takes to collect the stacks of 8 local ranks on SIGQUIT (its own "collected in" line),
# native programs and Python ones, against gdb dumping every thread of the same 8 processes
# one after the other (what one does by hand without hvdrun).
# With the sshd test hosts up (scripts/test-hosts.sh up 2, root), also 2 hosts x 4 ranks, whose
# stacks their node agents collect and send.
# usage: bench/forensics.sh [build_dir=build] [runs=3]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== bookkeeping per collective"
ns=$("$build/bench/progress_bench")
every=$("$build/bench/progress_bench" 5000000 every)
us=$("$build/hvdrun" -np 2 "$build/bench/allreduce_bench" 0.5 4096 2>/dev/null |
     sed 's/^\[0\]<stdout>://' | awk '!/^#/ && $1 == 4096 {print $3}')
awk -v ns="$ns" -v every="$every" -v us="$us" 'BEGIN {
  printf "  %.1f ns per collective; 4 KiB allreduce, 2 ranks: %.1f us; share %.2f %%\n", ns, us, ns / (us * 10)
  printf "  every collective timed (--timeline-collectives): %.1f ns; share %.2f %%\n", every, every / (us * 10) }'

# Collects the stacks of 8 ranks of `program...` once they run; prints hvdrun's time (ms) and
# gdb's for the same pids ($hosts: -H for remote ranks, then no gdb).
hosts=""
collect() {
  "$build/hvdrun" --stall-timeout 0 -np 8 ${hosts:+-H "$hosts"} "$@" > /dev/null 2> "$tmp/err" &
  local hvd=$!
  local pids=""
  for _ in $(seq 1 100); do
    pids=$(pgrep -P "$hvd" -d' ' -f "$1" || true)
    [ -n "$hosts" ] || [ "$(wc -w <<< "$pids")" -ge 8 ] && break
    sleep 0.1
  done
  sleep 2  # past their start
  kill -QUIT "$hvd"
  for _ in $(seq 1 100); do grep -q 'collected in' "$tmp/err" && break; sleep 0.1; done
  local ours
  ours=$(sed -n 's/.*collected in \([0-9.]*\) ms.*/\1/p' "$tmp/err" | head -1)
  local start end
  start=$(date +%s%N)
  [ -n "$hosts" ] || for p in $pids; do
    gdb -p "$p" -batch -ex "thread apply all bt" > /dev/null 2>&1 || true
  done
  end=$(date +%s%N)
  kill -TERM "$hvd"; wait "$hvd" || true
  echo "$ours $(( (end - start) / 1000000 ))"
}

cat > "$tmp/sleeper.py" <<'PY'
import time
time.sleep(120)
PY
for kind in native python; do
  echo "== stacks of 8 local ranks, $kind ($runs runs): hvdrun ms, gdb one by one ms, ratio"
  for _ in $(seq 1 "$runs"); do
    if [ "$kind" = native ]; then
      read -r ours gdb < <(collect "$build/tests/integration/hvdrun_test_worker" sleep "$tmp")
    else
      read -r ours gdb < <(collect /usr/bin/python3 "$tmp/sleeper.py")
    fi
    awk -v a="$ours" -v b="$gdb" 'BEGIN { printf "  %8.1f %8d   %.2fx\n", a, b, a / b }'
  done
done

state=/tmp/hvdrun-test-hosts
if [ -e "$state/count" ] && [ "$(cat "$state/count")" -ge 2 ]; then
  home=$(mktemp -d)
  mkdir -m 700 "$home/.ssh"
  cp "$state/ssh_config" "$state/known_hosts" "$state/id_ed25519" "$home/.ssh/"
  echo "== stacks of 2 hosts x 4 ranks, native, through their node agents ($runs runs): hvdrun ms"
  hosts="hvdt-h1:4,hvdt-h2:4"
  for _ in $(seq 1 "$runs"); do
    read -r ours _ < <(HOME=$home SSH_AUTH_SOCK='' collect "$build/tests/integration/hvdrun_test_worker" sleep "$tmp")
    printf '  %8.1f\n' "$ours"
  done
  rm -rf "$home"
fi
