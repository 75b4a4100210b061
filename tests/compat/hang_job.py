"""A job where one rank hangs, for hvdrun's stack collection tests.

--framework torch: torch.distributed (gloo) all_reduce; --framework horovod: hvd.allreduce.
Rank 1 sleeps in stuck_in_its_own_code() before the second allreduce, while the others wait in
it. Each rank creates DIR/<rank>.waiting (--marks DIR) when it has reached its place.
"""
import argparse
import os
import time

import torch


def stuck_in_its_own_code():
    time.sleep(600)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=["torch", "horovod"], required=True)
    parser.add_argument("--marks", required=True)
    args = parser.parse_args()
    if args.framework == "torch":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        allreduce = lambda t: dist.all_reduce(t)  # noqa: E731
    else:
        import horovod.torch as hvd
        hvd.init()
        rank = hvd.rank()
        allreduce = lambda t: hvd.allreduce(t, name="grad")  # noqa: E731
    tensor = torch.ones(8)
    allreduce(tensor)
    open(os.path.join(args.marks, f"{rank}.waiting"), "w").close()
    if rank == 1:
        stuck_in_its_own_code()
    allreduce(tensor)


if __name__ == "__main__":
    main()
