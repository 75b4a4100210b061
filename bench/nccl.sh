#!/usr/bin/env bash
# NCCL backend benchmark on one GPU: hvdrun's device allreduce against raw ncclAllReduce on the
# same communicator (8 B to 1 GiB, ratios), then fused allreduce of 256 x 16 KiB tensors with
# HVDRUN_FUSION_MODE=group and =pack (four shapes) against one call per tensor.
# usage: bench/nccl.sh [build_dir=build] [max_bytes=1073741824]
set -euo pipefail
build=${1:-build}
max=${2:-1073741824}
prog="$build/bench/nccl_bench"
[ -x "$prog" ] || { echo "nccl.sh: $prog not built (needs a build with CUDA and NCCL)" >&2; exit 2; }
strip() { sed 's/^\[0\]<stdout>://'; }
set +e
HVDRUN_FUSION_MODE=group "$build/hvdrun" -np 1 "$prog" "$max" | strip
code=${PIPESTATUS[0]}
set -e
if [ "$code" = 77 ]; then echo "nccl.sh: no GPU here; run it on a machine with one" >&2; exit 77; fi
[ "$code" = 0 ] || exit "$code"
HVDRUN_FUSION_MODE=pack "$build/hvdrun" -np 1 "$prog" --fusion-only | strip | grep -v '^# GPU'
HVDRUN_FUSION_MODE=pack HVDRUN_FUSION_THRESHOLD=0 "$build/hvdrun" -np 1 "$prog" --fusion-only |
  strip | grep -v '^# GPU'
