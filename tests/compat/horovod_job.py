"""A Horovod program as users write it, for hvdrun's compatibility tests.

hvd.init() through the launcher's Gloo rendezvous; Horovod's topology checked against the
HOROVOD_* variables; allreduce (sum, average), allgather and broadcast with known answers; a
short hvd.DistributedOptimizer training from different initial weights per rank, made equal by
broadcast_parameters, whose parameters must end identical on every rank.

Options: --steps N (training steps), --fail-rank R (rank R raises after init; the other ranks
wait 2 s before their first collective, so that the raising rank is the first to exit rather
than a peer whose collective fails because of it).
Exit status 0 only if every check passed.
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import horovod.torch as hvd


def check(condition, what):
    if not condition:
        print(f"CHECK FAILED on rank {hvd.rank()}: {what}", file=sys.stderr, flush=True)
        sys.exit(3)


def topology():
    r, n = hvd.rank(), hvd.size()
    facts = {"HOROVOD_RANK": r, "HOROVOD_SIZE": n, "HOROVOD_LOCAL_RANK": hvd.local_rank(),
             "HOROVOD_LOCAL_SIZE": hvd.local_size(), "HOROVOD_CROSS_RANK": hvd.cross_rank(),
             "HOROVOD_CROSS_SIZE": hvd.cross_size()}
    for name, value in facts.items():
        check(int(os.environ[name]) == value, f"{name}={os.environ[name]} but Horovod says {value}")
    print(f"topology rank={r} size={n} local_rank={hvd.local_rank()} "
          f"local_size={hvd.local_size()} cross_rank={hvd.cross_rank()} "
          f"cross_size={hvd.cross_size()} gloo={hvd.gloo_enabled()} mpi={hvd.mpi_enabled()} "
          f"host={os.environ['HOROVOD_HOSTNAME']} iface={os.environ.get('HOROVOD_GLOO_IFACE')}")


def collectives():
    r, n = hvd.rank(), hvd.size()
    t = torch.full((4,), float(r + 1))
    total = hvd.allreduce(t, op=hvd.Sum, name="sum")
    mean = hvd.allreduce(t, op=hvd.Average, name="average")
    gathered = hvd.allgather(torch.tensor([r, 10 * r]), name="gather")
    value = hvd.broadcast(torch.tensor([float(100 + r)]), root_rank=0, name="bcast")
    check(total.tolist() == [n * (n + 1) / 2] * 4, f"allreduce sum {total.tolist()}")
    check(torch.allclose(mean, torch.full((4,), (n + 1) / 2)), f"allreduce average {mean.tolist()}")
    check(gathered.tolist() == [x for i in range(n) for x in (i, 10 * i)],
          f"allgather {gathered.tolist()}")
    check(value.item() == 100.0, f"broadcast {value.item()}")
    print(f"collectives rank={r} sum={total[0].item():g} average={mean[0].item():g} "
          f"allgather={gathered.tolist()} broadcast={value.item():g} OK")


def train(steps):
    r, n = hvd.rank(), hvd.size()
    torch.manual_seed(1000 + r)  # different weights per rank until broadcast_parameters
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.Generator().manual_seed(7)
    x = torch.randn(512, 8, generator=data)
    y = x @ torch.randn(8, 1, generator=data)
    xs, ys = x[r::n], y[r::n]
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    digest = hashlib.sha256(weights).hexdigest()[:16]
    in_sync = len(set(hvd.allgather_object(digest))) == 1
    print(f"train rank={r} steps={steps} loss first={losses[0]:.4f} last={losses[-1]:.4f} "
          f"params={digest} in_sync={in_sync}")
    check(in_sync, "parameters differ between ranks")
    check(losses[-1] < losses[0], f"loss did not fall: {losses[0]} -> {losses[-1]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--fail-rank", type=int, default=-1)
    args = parser.parse_args()
    hvd.init()
    topology()
    if hvd.rank() == args.fail_rank:
        raise RuntimeError(f"rank {hvd.rank()} fails on purpose")
    if args.fail_rank >= 0:
        time.sleep(2)
    collectives()
    train(args.steps)
    hvd.shutdown()
    print(f"done rank={os.environ['HOROVOD_RANK']}")


if __name__ == "__main__":
    main()
