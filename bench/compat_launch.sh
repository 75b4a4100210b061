#!/usr/bin/env bash
# Start-to-finish wall time of real Horovod and PyTorch programs, hvdrun against the launcher
# it replaces, interleaved in one run (median [min] of RUNS, ms; ratio of medians):
#   horovodrun -np 4 -H localhost:4 --gloo python3 horovod_hello.py   (hvd.init, one allreduce)
#   hvdrun     -np 4                      python3 horovod_hello.py
#   torchrun --standalone --nproc_per_node=4 gloo_hello.py            (init_process_group, barrier)
#   hvdrun   -np 4                          python3 gloo_hello.py
# The floor line is the workers' own start-up without any launcher (N parallel Python
# processes importing torch and Horovod). Horovod and horovodrun come from the prebuilt archive (unpacked by the build into
# BUILD/tests/horovod-0.28.1-prebuilt, else from ../shared/thirdparty); torchrun and
# gloo_hello.py from ../shared/peers. Needs Debian's python3-torch (/usr/bin/python3).
# usage: bench/compat_launch.sh [build_dir=build] [runs=5] [np=4]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
runs=${2:-5}
np=${3:-4}
hvdrun="$build/hvdrun"
python=/usr/bin/python3
peers="$root/../shared/peers"
[ -x "$hvdrun" ] || { echo "compat_launch.sh: $hvdrun not built" >&2; exit 1; }
[ -f "$peers/torchrun311.py" ] || { echo "compat_launch.sh: no $peers/torchrun311.py" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
horovod="$build/tests/horovod-0.28.1-prebuilt/horovod-0.28.1"
if [ ! -d "$horovod" ]; then
  archive="$root/../shared/thirdparty/horovod-0.28.1-torch1.13-py3.11-cpu.tar.xz"
  [ -f "$archive" ] || { echo "compat_launch.sh: no Horovod in $build nor $archive" >&2; exit 1; }
  tar -C "$tmp" -xf "$archive"
  horovod="$tmp/horovod-0.28.1"
fi
export PYTHONPATH="$horovod/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export PATH="/usr/bin:$PATH"  # horovodrun's workers run `python3`: Debian's, which has torch

elapsed_us() {  # runs "$@", prints its wall time in microseconds
  local t0=$EPOCHREALTIME
  "$@" > "$tmp/last.log" 2>&1 || { echo "compat_launch.sh: '$*' failed:" >&2; cat "$tmp/last.log" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) ))
}
import_floor() {  # the workers' own start-up, no launcher: N parallel imports of torch + Horovod
  local i
  for ((i = 0; i < np; i++)); do "$python" -c 'import torch, horovod.torch' & done
  wait
}
stats() {  # stdin: microseconds, one per line -> "median min" in ms
  sort -n | awk '{a[NR] = $1} END {printf "%.0f %.0f\n", a[int((NR + 1) / 2)] / 1000, a[1] / 1000}'
}

for ((r = 0; r < runs; r++)); do
  elapsed_us import_floor >> "$tmp/floor"
  elapsed_us "$horovod/bin/horovodrun" --disable-cache -np "$np" -H "localhost:$np" --gloo \
    "$python" "$root/bench/horovod_hello.py" >> "$tmp/horovodrun"
  elapsed_us "$hvdrun" -np "$np" "$python" "$root/bench/horovod_hello.py" >> "$tmp/hvdrun-hvd"
  elapsed_us "$python" "$peers/torchrun311.py" --standalone --nproc_per_node="$np" \
    "$peers/gloo_hello.py" >> "$tmp/torchrun"
  elapsed_us "$hvdrun" -np "$np" "$python" "$peers/gloo_hello.py" >> "$tmp/hvdrun-torch"
done
read -r fm fmin < <(stats < "$tmp/floor")
read -r hm hmin < <(stats < "$tmp/horovodrun")
read -r vm vmin < <(stats < "$tmp/hvdrun-hvd")
read -r tm tmin < <(stats < "$tmp/torchrun")
read -r wm wmin < <(stats < "$tmp/hvdrun-torch")
printf '# %d ranks, %d runs each, wall ms: median [min]; ratio = peer / hvdrun (medians)\n' "$np" "$runs"
printf '%-40s %8s [%6s]\n' "floor: $np parallel imports, no launcher" "$fm" "$fmin"
printf '%-40s %8s [%6s]\n' "horovodrun --gloo  horovod_hello.py" "$hm" "$hmin"
printf '%-40s %8s [%6s]   horovodrun/hvdrun %s\n' "hvdrun             horovod_hello.py" "$vm" "$vmin" \
  "$(awk -v a="$hm" -v b="$vm" 'BEGIN {printf "%.1fx", a / b}')"
printf '%-40s %8s [%6s]\n' "torchrun --standalone  gloo_hello.py" "$tm" "$tmin"
printf '%-40s %8s [%6s]   torchrun/hvdrun %s\n' "hvdrun                 gloo_hello.py" "$wm" "$wmin" \
  "$(awk -v a="$tm" -v b="$wm" 'BEGIN {printf "%.1fx", a / b}')"
