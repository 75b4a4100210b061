"""Launch benchmark worker: Horovod init (Gloo rendezvous), one allreduce, exit."""
import torch
import horovod.torch as hvd

hvd.init()
total = hvd.allreduce(torch.ones(1), op=hvd.Sum, name="hello")
assert total.item() == hvd.size()
hvd.shutdown()
