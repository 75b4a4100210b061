"""An elastic Horovod program as users write it, for hvdrun's compatibility tests.

hvd.elastic.run over a hvd.elastic.TorchState (model, optimizer, batch): each batch's data is
fixed by its number and split over the ranks of the moment, committed every --commit-every
batches. The worker whose HVDRUN_SLOT is --fail-slot dies (os._exit(1), as a crash would) when
it reaches batch --fail-at; the others catch Horovod's error, roll back to their last commit,
ask hvdrun's rendezvous for their new places, and go on. The worker whose slot is
--late-fail-slot dies --late-fail-delay seconds after reaching that batch, while the others
wait for their new places. The worker whose slot is --break-slot closes its Gloo connections
at that batch (hvd.shutdown()) and raises Horovod's internal error, as a broken connection
would make it: every worker's collective fails, and no process exits. The worker whose slot
is 0 writes --hosts-text into --hosts-file when it reaches batch --hosts-at (the discovery
script prints that file): the job's slots change while it trains. The worker whose slot is
--die-on-hosts-slot dies as soon as <--hosts-file>.seen exists, which the test's discovery
script makes once hvdrun has read the new list (its host went away before the others took the
change in). The worker whose slot is --die-early-slot dies right after
hvd.init(), and the others enter hvd.elastic.run --enter-delay seconds later.
--first-gloo-timeout S bounds the Gloo operations of the process's first generation by S seconds
(a survivor whose Gloo peers are alive notices a dead worker only by that timeout); later
generations have Horovod's default (30 s), which a newcomer's start needs on a loaded machine.
At the end every rank prints
"done rank=R size=N resets=K batch=B params=<hash> in_sync=<bool> pid=<its pid>".
Exit status 0 only if the ranks agree.
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--commit-every", type=int, default=4)
    parser.add_argument("--fail-slot", type=int, default=-1)
    parser.add_argument("--fail-at", type=int, default=10)
    parser.add_argument("--late-fail-slot", type=int, default=-1)
    parser.add_argument("--late-fail-delay", type=float, default=1.5)
    parser.add_argument("--break-slot", type=int, default=-1)
    parser.add_argument("--step-delay", type=float, default=0.02)
    parser.add_argument("--hosts-file", default="")
    parser.add_argument("--hosts-text", default="")
    parser.add_argument("--hosts-at", type=int, default=-1)
    parser.add_argument("--die-on-hosts-slot", type=int, default=-1)
    parser.add_argument("--die-early-slot", type=int, default=-1)
    parser.add_argument("--enter-delay", type=float, default=0.0)
    parser.add_argument("--first-gloo-timeout", default="")
    args = parser.parse_args()
    me = int(os.environ["HVDRUN_SLOT"])

    if args.first_gloo_timeout:
        os.environ["HOROVOD_GLOO_TIMEOUT_SECONDS"] = args.first_gloo_timeout
    hvd.init()
    os.environ.pop("HOROVOD_GLOO_TIMEOUT_SECONDS", None)  # read again by each hvd.init()
    if me == args.die_early_slot:
        print(f"slot {me} dies before hvd.elastic.run", flush=True)
        os._exit(1)
    time.sleep(args.enter_delay)
    torch.manual_seed(1000 + hvd.rank())  # different weights per rank until the first sync
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, batch=0)
    resets = []  # this process's re-formations (not state: a sync sets state to rank 0's)
    hosts_written = []

    def on_reset():
        resets.append(state.batch)
        print(f"reset rank={hvd.rank()} size={hvd.size()} batch={state.batch}", flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        while state.batch < args.batches:
            if me == args.fail_slot and state.batch == args.fail_at:
                print(f"slot {me} dies at batch {state.batch}", flush=True)
                os._exit(1)
            if me == args.late_fail_slot and state.batch == args.fail_at:
                time.sleep(args.late_fail_delay)
                print(f"slot {me} dies late at batch {state.batch}", flush=True)
                os._exit(1)
            if me == args.break_slot and state.batch == args.fail_at and not resets:
                print(f"slot {me} breaks its connections at batch {state.batch}", flush=True)
                hvd.shutdown()
                raise HorovodInternalError("connections broken on purpose")
            if me == 0 and state.batch == args.hosts_at and not hosts_written:
                with open(args.hosts_file + ".new", "w") as hosts:
                    hosts.write(args.hosts_text + "\n")
                os.replace(args.hosts_file + ".new", args.hosts_file)  # never read half-written
                hosts_written.append(state.batch)
                print(f"slot 0 lists {args.hosts_text} at batch {state.batch}", flush=True)
            if me == args.die_on_hosts_slot and os.path.exists(args.hosts_file + ".seen"):
                print(f"slot {me} dies with its host at batch {state.batch}", flush=True)
                os._exit(1)
            data = torch.Generator().manual_seed(state.batch)
            x = torch.randn(64, 8, generator=data)
            y = x.sum(dim=1, keepdim=True)
            r, n = hvd.rank(), hvd.size()
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x[r::n]), y[r::n]).backward()
            optimizer.step()
            state.batch += 1
            if state.batch % args.commit_every == 0:
                state.commit()
            time.sleep(args.step_delay)

    train(state)
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    digest = hashlib.sha256(weights).hexdigest()[:16]
    in_sync = len(set(hvd.allgather_object(digest))) == 1
    print(f"done rank={hvd.rank()} size={hvd.size()} resets={len(resets)} batch={state.batch} "
          f"params={digest} in_sync={in_sync} pid={os.getpid()}", flush=True)
    hvd.shutdown()
    sys.exit(0 if in_sync else 3)


if __name__ == "__main__":
    main()
