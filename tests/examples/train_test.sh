#!/usr/bin/env bash
# usage: train_test.sh HVDRUN TRAIN WORK_DIR
# Runs the example on 4 ranks: exit 0, rank-0-only progress lines, a falling loss, a good
# accuracy and "all 4 ranks agree"; then a checkpointed run is resumed from its last epoch.
set -euo pipefail
hvdrun=$1 train=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "train_test: $*" >&2; cat "$work"/*.out >&2; exit 1; }

"$hvdrun" -np 4 "$train" --epochs 4 --samples 16384 > "$work/run.out" 2>&1 || fail "training failed"
grep -q '^\[0\]<stdout>:all 4 ranks agree: weights hash ' "$work/run.out" || fail "ranks did not agree"
grep -q '^\[[123]\]<stdout>:' "$work/run.out" && fail "ranks other than 0 printed progress"
[ "$(grep -c '^\[0\]<stdout>:epoch [0-9]/4: ' "$work/run.out")" = 4 ] || fail "expected 4 epoch lines"
grep -q 'samples/sec' "$work/run.out" || fail "no throughput figure"
losses=$(sed -n 's/.*epoch [0-9]\/4: train loss \([0-9.]*\).*/\1/p' "$work/run.out")
first=$(echo "$losses" | head -n 1)
last=$(echo "$losses" | tail -n 1)
awk -v a="$first" -v b="$last" 'BEGIN {exit !(b < a)}' || fail "loss did not fall: $first -> $last"
acc=$(sed -n 's/.*final: val loss [0-9.]*  val accuracy \([0-9.]*\).*/\1/p' "$work/run.out")
awk -v a="$acc" 'BEGIN {exit !(a > 0.75)}' || fail "final accuracy $acc is not above 0.75"

ckpt="$work/ckpt"
"$hvdrun" -np 2 "$train" --epochs 2 --samples 4096 --checkpoint-dir "$ckpt" > "$work/first.out" 2>&1 \
  || fail "checkpointed run failed"
[ -f "$ckpt/checkpoint.bin" ] || fail "rank 0 wrote no checkpoint"
"$hvdrun" -np 2 "$train" --epochs 3 --samples 4096 --checkpoint-dir "$ckpt" > "$work/resume.out" 2>&1 \
  || fail "resumed run failed"
grep -q 'resuming at epoch 3' "$work/resume.out" || fail "resume epoch not broadcast"
[ "$(grep -c 'epoch [0-9]/3: ' "$work/resume.out")" = 1 ] || fail "resumed run should train one epoch"
grep -q 'all 2 ranks agree' "$work/resume.out" || fail "resumed ranks did not agree"
echo "train_test: ok (loss $first -> $last, accuracy $acc)"
