#!/usr/bin/env bash
# Checks a bundle (scripts/bundle.sh) on a GPU node that lacks the build's packages: the
# one-GPU training smoke job, preflight's GPU checks, the device collectives in every fusion mode, the NCCL error
# paths, the NCCL benchmark up to 64 MiB, and hang forensics on a PyTorch CUDA process (its
# Python stack on SIGQUIT; native frames only where eu-stack is installed). NCCL comes from
# PyTorch's nvidia-nccl package when the node has no other.
# usage: tests/gpu/gpu_node_check.sh [bundle=build/bundle]
set -uo pipefail
b=${1:-build/bundle}
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$b/lib${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
step() {  # step NAME COMMAND...: runs it, says how it ended
  local name=$1; shift
  local start=$SECONDS
  "$@"; local code=$?
  echo "== $name: exit $code in $((SECONDS - start)) s"
  [ $code -eq 0 ] || status=1
}
nvidia-smi -L
step train_smoke bash "$b/tests/gpu/train_gpu_test.sh" "$b/hvdrun" "$b/examples/train" \
  "$b/tests/gpu/gpu_collectives_check"
step preflight bash "$b/tests/gpu/preflight_gpu_test.sh" "$b/hvdrun" "$b/tests/gpu/gpu_collectives_check"
step collectives_group "$b/hvdrun" -np 1 "$b/tests/gpu/gpu_collectives_check"
step collectives_pack env HVDRUN_FUSION_MODE=pack "$b/hvdrun" -np 1 "$b/tests/gpu/gpu_collectives_check"
step collectives_unfused env HVDRUN_FUSION_THRESHOLD=0 "$b/hvdrun" -np 1 "$b/tests/gpu/gpu_collectives_check"
step nccl_error_paths "$b/tests/gpu/gpu_nccl_error_paths"
step nccl_bench timeout 240 bash "$b/bench/nccl.sh" "$b" 67108864

tmp=$(mktemp -d)
cat > "$tmp/cuda_hang.py" <<'PY'
import os, sys, time, torch
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").close()
def waits_here():
    time.sleep(60)
waits_here()
PY
stacks_check() {
  "$b/hvdrun" --output-filename "$tmp/out" -np 1 python3 "$tmp/cuda_hang.py" "$tmp/ready" \
    > "$tmp/stdout" 2> "$tmp/stderr" &
  local hvd=$!
  for _ in $(seq 1 600); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
  kill -QUIT $hvd
  for _ in $(seq 1 100); do grep -q 'collected in' "$tmp/stderr" && break; sleep 0.1; done
  kill -TERM $hvd; wait $hvd
  cat "$tmp/stderr"
  head -20 "$tmp/out/stacks/rank.0.txt"
  grep -q 'in waits_here' "$tmp/out/stacks/rank.0.txt"
}
step stacks_of_a_cuda_process stacks_check
rm -rf "$tmp"
exit $status
