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


def raise_fd_limit():
    """The soft open-file limit up to the hard one (a TCPStore client holds several fds)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def receive(conn, what):
    """The next message on `conn`, waiting at most WAIT_S."""
    if not conn.poll(WAIT_S):
        sys.exit("tcpstore_rendezvous: no word from %s within %d s" % (what, WAIT_S))
    try:
        return conn.recv()
    except EOFError:
        sys.exit("tcpstore_rendezvous: %s ended early" % what)


def cpu_ns():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return int((u.ru_utime + u.ru_stime) * 1e9)


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def data_of(rank):
    return "10.%d.%d.%d:%d" % (rank >> 16, (rank >> 8) & 255, rank & 255, 1024 + rank % 60000)


def serve(n, conn):
    limit = raise_fd_limit()
    if limit < 2 * n + 256:
        conn.send(("error", "needs %d open files (ulimit -n)" % (2 * n + 256)))
        return
    store = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT, wait_for_workers=False)
    # One client and one request first: the code and buffers that every run touches are in
    # before the baseline, which then counts what the workers' connections add.
    warm = dist.TCPStore("127.0.0.1", store.port, None, False, TIMEOUT)
    warm.set("warm", "up")
    del warm
    before, cpu_before = resident_bytes(), cpu_ns()
    conn.send(("port", store.port))
    receive(conn, "the launcher (measure)")  # the clients are done
    conn.send(("measured", resident_bytes() - before, cpu_ns() - cpu_before))
    receive(conn, "the launcher (end)")  # hold the store and every connection until then


def clients(n, count, port, go, conn):
    limit = raise_fd_limit()
    if limit < 4 * count + 256:
        conn.send(("error", "needs %d open files (ulimit -n)" %
                   (4 * count + 256)))
        return
    conn.send(("ready",))
    if not go.wait(WAIT_S):
        return
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
    receive(conn, "the launcher (end)")  # connections open until the server was measured


def expect(conn, kind, what):
    report = receive(conn, what)
    if report[0] != kind:
        sys.exit("tcpstore_rendezvous: %s: %s" % (what, report[-1]))
    return report


def run(n, procs, ctx, children):
    server_end, here = ctx.Pipe()
    server = ctx.Process(target=serve, args=(n, server_end), daemon=True)
    server.start()
    server_end.close()  # a child that dies is seen as the end of its pipe
    children.append(server)
    port = expect(here, "port", "the server")[1]
    go = ctx.Event()
    links = []
    for p in range(procs):
        count = n // procs + (1 if p < n % procs else 0)
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=clients, args=(n, count, port, go, theirs), daemon=True)
        proc.start()
        theirs.close()
        children.append(proc)
        links.append(mine)
    for conn in links:
        expect(conn, "ready", "a client process")
    start = time.monotonic_ns()
    go.set()
    last, cpu = 0, 0
    for conn in links:
        report = expect(conn, "done", "a client process")
        last, cpu = max(last, report[1]), cpu + report[2]
    here.send("measure")
    _, growth, server_cpu = expect(here, "measured", "the server")
    for conn in links + [here]:
        conn.send("end")
    print("workers %d last_assignment_ms %.1f server_cpu_ms %.1f server_bytes_per_worker %.0f "
          "clients_cpu_ms %.1f" % (n, (last - start) / 1e6, server_cpu / 1e6, growth / n,
                                   cpu / 1e6))


def main():
    n = int(sys.argv[1])
    procs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    ctx = multiprocessing.get_context("fork")
    children = []
    try:
        run(n, procs, ctx, children)
    finally:
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()
                child.join(10)


if __name__ == "__main__":
    main()
