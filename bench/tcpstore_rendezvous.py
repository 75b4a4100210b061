"""The peer of rendezvous_scale_bench: the same rendezvous done over PyTorch's TCPStore, the
key-value store that torchrun's workers meet in.

N simulated workers, spread over P client processes, each do what a worker needs to join a
ring: connect to the store, take a rank (add on a counter), publish their data address (set),
and read the addresses of both ring neighbours (get, which waits until the neighbour has
published). The store's server runs in a process of its own, as in torchrun's agent. Within a
client process the workers go through each step one after the other (a TCPStore client waits
for each reply); the processes run side by side.

Prints one line in the format of rendezvous_scale_bench: the time from the start to the last
worker holding both neighbours' addresses, the server's CPU time and resident memory growth
per worker (both taken once every worker is done, with every connection still open), and the
client processes' CPU time.

usage: /usr/bin/python3 tcpstore_rendezvous.py N [client_processes=2]
"""

import datetime
import multiprocessing
import os
import resource
import sys
import time

import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=300)
WAIT_S = 300  # for any one report of a child


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        sys.exit("needs %d open files and cannot raise the limit (ulimit -n)" % need)
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def cpu_ns():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return int((u.ru_utime + u.ru_stime) * 1e9)


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def data_of(rank):
    return "10.%d.%d.%d:%d" % (rank >> 16, (rank >> 8) & 255, rank & 255, 1024 + rank % 60000)


def serve(n, conn):
    raise_fd_limit(n + 256)
    before, cpu_before = resident_bytes(), cpu_ns()
    store = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT, wait_for_workers=False)
    conn.send(store.port)
    if not conn.poll(WAIT_S):  # the clients are done
        sys.exit("tcpstore_rendezvous: the clients did not finish")
    conn.recv()
    conn.send((resident_bytes() - before, cpu_ns() - cpu_before))
    conn.recv()  # hold the store (and every connection) until told to end
    del store


def clients(n, count, port, go, conn):
    raise_fd_limit(count + 256)
    go.wait(WAIT_S)
    cpu_before = cpu_ns()
    stores, ranks = [], []
    for _ in range(count):
        store = dist.TCPStore("127.0.0.1", port, None, False, TIMEOUT)
        rank = store.add("rank", 1) - 1
        store.set("addr/%d" % rank, data_of(rank))
        stores.append(store)
        ranks.append(rank)
    for store, rank in zip(stores, ranks):
        prev = store.get("addr/%d" % ((rank + n - 1) % n)).decode()
        nxt = store.get("addr/%d" % ((rank + 1) % n)).decode()
        if prev != data_of((rank + n - 1) % n) or nxt != data_of((rank + 1) % n):
            conn.send(("error", "worker %d: wrong neighbours %s %s" % (rank, prev, nxt)))
            return
    conn.send(("done", time.monotonic_ns(), cpu_ns() - cpu_before))
    conn.recv()  # keep the connections open until the server was measured


def main():
    n = int(sys.argv[1])
    procs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    ctx = multiprocessing.get_context("fork")
    server_end, here = ctx.Pipe()
    server = ctx.Process(target=serve, args=(n, server_end))
    server.start()
    if not here.poll(WAIT_S):
        sys.exit("tcpstore_rendezvous: the server did not start")
    port = here.recv()
    go = ctx.Event()
    children = []
    for p in range(procs):
        count = n // procs + (1 if p < n % procs else 0)
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=clients, args=(n, count, port, go, theirs))
        proc.start()
        children.append((proc, mine))
    time.sleep(0.2)  # every client process is waiting
    start = time.monotonic_ns()
    go.set()
    last, cpu = 0, 0
    for proc, conn in children:
        if not conn.poll(WAIT_S):
            sys.exit("tcpstore_rendezvous: a client process did not report")
        report = conn.recv()
        if report[0] != "done":
            sys.exit("tcpstore_rendezvous: " + report[1])
        last, cpu = max(last, report[1]), cpu + report[2]
    here.send("measure")
    if not here.poll(WAIT_S):
        sys.exit("tcpstore_rendezvous: the server did not report")
    growth, server_cpu = here.recv()
    for proc, conn in children:
        conn.send("end")
        proc.join(WAIT_S)
    here.send("end")
    server.join(WAIT_S)
    print("workers %d last_assignment_ms %.1f server_cpu_ms %.1f server_bytes_per_worker %.0f "
          "clients_cpu_ms %.1f" % (n, (last - start) / 1e6, server_cpu / 1e6, growth / n,
                                   cpu / 1e6))


if __name__ == "__main__":
    main()
