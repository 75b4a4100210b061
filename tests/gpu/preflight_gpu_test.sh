#!/usr/bin/env bash
# hvdrun --preflight-only on a GPU machine: with one slot per visible GPU every host passes and
# the table has the GPU matrix product's figure (and NCCL's, with two GPUs or more); with one
# slot more than the GPUs shown (CUDA_VISIBLE_DEVICES keeps the first only), the host fails
# naming its count. Exit 77 (skipped) when no CUDA device is visible.
# usage: preflight_gpu_test.sh HVDRUN CHECK_PROGRAM
set -uo pipefail
hvdrun=$1 check=$2
"$check" --probe
probe=$?
[ $probe -eq 0 ] || exit $probe
fail() { echo "preflight_gpu_test: $*" >&2; exit 1; }
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then  # what the runtime shows, not all the machine has
  gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
[ "${gpus:-0}" -ge 1 ] || gpus=1
np=$((gpus > 8 ? 8 : gpus))

out=$("$hvdrun" -np "$np" --preflight-only true 2>&1); code=$?
echo "$out"
[ $code -eq 0 ] || fail "-np $np on $gpus GPUs: exit $code"
grep -q 'GPU TFLOP/s  NCCL GB/s' <<<"$out" || fail "no GPU columns in the table"
grep -Eq "localhost +ok +ok +$np/$np +[0-9]+\.[0-9]+ " <<<"$out" || fail "no GPU GEMM figure"
if [ "$np" -ge 2 ]; then
  grep -Eq "localhost +ok +ok +$np/$np +[0-9.]+ +[0-9]+\.[0-9] " <<<"$out" || fail "no NCCL figure"
fi

out=$(CUDA_VISIBLE_DEVICES=0 "$hvdrun" -np 2 --preflight-only true 2>&1); code=$?
echo "$out"
[ $code -eq 1 ] || fail "2 slots on 1 visible GPU: exit $code, expected 1"
grep -q 'FAIL: GPUs: 1 visible for 2 slots' <<<"$out" || fail "the GPU count is not named"
echo "preflight_gpu_test: passed on $gpus GPUs"
