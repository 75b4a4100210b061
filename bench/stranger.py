#!/usr/bin/env python3
"""A stranger on this machine (run it as another user) who tries to steer a job: every 0.2 s,
8 PUT /worker_addresses/... and 8 GET /rank_and_size/... to the job's Horovod port (what made
an elastic job believe it ran Horovod and re-form), and 8 connections that send junk to the
job's rendezvous port. Prints one line: Horovod requests sent and answered (with the gate, none
is), rendezvous connections and how many the server closed (it sends its challenge to anyone
who connects, then closes on junk).

usage: bench/stranger.py HOST HOROVOD_PORT RENDEZVOUS_PORT SECONDS
"""
import signal
import socket
import sys
import time


def http(host, port, payload):
    """Sends payload; True if the server answered anything, False if it closed or timed out."""
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.settimeout(1)
            s.sendall(payload)
            return len(s.recv(64)) > 0
    except OSError:
        return False


def junk(host, port):
    """Sends junk; True once the server closed the connection (within 1 s)."""
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.settimeout(1)
            s.sendall(b"\x00junk" * 16)
            while s.recv(4096):
                pass
            return True
    except OSError:
        return False


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    host, hvd, rdzv, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    sent = answered = connections = closed = 0
    end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    n = 0
    while time.monotonic() < end and not stop:
        for i in range(8):
            key = f"stranger{n}-{i}:0"
            address = f"10.9.{i}.{n % 250 + 1}:4242"  # a worker address it made up
            put = (f"PUT /worker_addresses/{key} HTTP/1.1\r\nHost: h\r\n"
                   f"Content-Length: {len(address)}\r\n\r\n{address}").encode()
            get = f"GET /rank_and_size/{key} HTTP/1.1\r\nHost: h\r\n\r\n".encode()
            for payload in (put, get):
                sent += 1
                answered += http(host, hvd, payload)
            connections += 1
            closed += junk(host, rdzv)
        n += 1
        time.sleep(0.2)
    print(f"stranger: {sent} Horovod requests, {answered} answered; {connections} rendezvous "
          f"connections with junk, {closed} closed by the server")


if __name__ == "__main__":
    main()
