#!/usr/bin/env bash
# The one-GPU CI smoke job: hvdrun -np 1 train --gpu --epochs 2 must exit 0 with the ranks
# agreeing. Exit 77 (skipped) when no CUDA device is visible.
# usage: train_gpu_test.sh HVDRUN TRAIN CHECK_PROGRAM
set -uo pipefail
hvdrun=$1 train=$2 check=$3
"$check" --probe
probe=$?
[ $probe -eq 0 ] || exit $probe
out=$("$hvdrun" -np 1 "$train" --gpu --epochs 2 --samples 8192 2>&1)
code=$?
echo "$out"
[ $code -eq 0 ] || { echo "train_gpu_test: hvdrun exited $code" >&2; exit 1; }
grep -q 'epoch 2/2: train loss' <<<"$out" || { echo "train_gpu_test: no epoch 2 line" >&2; exit 1; }
grep -q 'all 1 ranks agree' <<<"$out" || { echo "train_gpu_test: no agreement line" >&2; exit 1; }
echo "train_gpu_test: one-GPU training passed"
