"""A PyTorch DDP program as users write it, for hvdrun's compatibility tests.

torch.distributed.init_process_group("gloo") with init_method env:// (MASTER_ADDR/PORT, RANK,
WORLD_SIZE from the launcher); prints every torchrun variable; trains a small model with
DistributedDataParallel and a DistributedSampler; the parameters must end identical on every
rank. Exit status 0 only if every check passed. With DDP_FAIL_ONCE_RANK=R, rank R of the
first run (TORCHELASTIC_RESTART_COUNT=0) dies after its first training step, as a crash would.
"""
import gc
import hashlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

TORCHRUN_VARIABLES = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                      "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME",
                      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                      "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "OMP_NUM_THREADS"]


def fail(what):
    print(f"CHECK FAILED: {what}", file=sys.stderr, flush=True)
    sys.exit(3)


def main():
    missing = [name for name in TORCHRUN_VARIABLES if name not in os.environ]
    if missing:
        fail(f"missing {missing}")
    print("env " + " ".join(f"{name}={os.environ[name]}" for name in TORCHRUN_VARIABLES))
    dist.init_process_group("gloo")
    r, n = dist.get_rank(), dist.get_world_size()
    if r != int(os.environ["RANK"]) or n != int(os.environ["WORLD_SIZE"]):
        fail(f"torch says rank {r} of {n}")

    torch.manual_seed(500 + r)  # DDP's constructor broadcasts rank 0's parameters
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(11)
    x = torch.randn(480, 6, generator=data)
    dataset = TensorDataset(x, x.sum(dim=1, keepdim=True))
    sampler = DistributedSampler(dataset, num_replicas=n, rank=r, shuffle=True, seed=3)
    loader = DataLoader(dataset, batch_size=24, sampler=sampler)
    losses = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if (os.environ.get("DDP_FAIL_ONCE_RANK") == str(r)
                    and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"):
                print(f"rank {r} crashing after step 1", file=sys.stderr, flush=True)
                os._exit(7)
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    digest = hashlib.sha256(weights).hexdigest()[:16]
    digests = [None] * n
    dist.all_gather_object(digests, digest)
    in_sync = len(set(digests)) == 1
    print(f"train rank={r} samples={len(sampler)} loss first={losses[0]:.4f} "
          f"last={losses[-1]:.4f} params={digest} in_sync={in_sync}")
    if not in_sync:
        fail("parameters differ between ranks")
    if losses[-1] >= losses[0]:
        fail(f"loss did not fall: {losses[0]} -> {losses[-1]}")
    dist.barrier()
    # The DDP wrapper first: torch 1.13 can deadlock when its Reducer drops the last reference
    # to the Gloo process group (the group's thread waits for the GIL that the destructor holds).
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
