#!/usr/bin/env python3
"""Hashed traffic for tests/soak/soak.sh, run in both namespaces at once.

    traffic.py PEER_ADDR STATS_JSON

Serves TCP port 5400 and UDP port 5401 and, at the same time, sends to
PEER_ADDR's:

- TCP transfers of 1 to 8 MiB of random data (40 Mbit/s on average, each
  as fast as TCP goes), one connection each, framed
  as 8 bytes of length, the data's SHA-256, then the data; the receiver
  checks the hash and answers one byte (1 intact, 0 corrupted) before
  closing, and the sender waits for it. A transfer whose connection fails
  (a restart of a yipd on the way) counts as cut at the sender; one that
  arrives short counts as short at the receiver; neither is corruption.
- UDP datagrams of 32 to 1400 bytes, up to 200 a second, each the SHA-256
  of the rest, then the rest (8 bytes of sequence number and random bytes).

Writes its counters to STATS_JSON every 5 s and when SIGTERM stops it.
"""
import hashlib
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

peer, stats_path = sys.argv[1], sys.argv[2]
TCP_RATE = 40e6  # bit/s
lock = threading.Lock()
stats = {k: 0 for k in ("tcp_sent", "tcp_cut", "tcp_ok", "tcp_ok_bytes", "tcp_bad", "tcp_short",
                        "udp_sent", "udp_ok", "udp_bad")}
stop = threading.Event()


def count(key, n=1):
    with lock:
        stats[key] += n


def save():
    with lock:
        text = json.dumps(stats)
    with open(stats_path + ".tmp", "w") as f:
        f.write(text)
    os.replace(stats_path + ".tmp", stats_path)


def recv_exact(c, n):
    buf = bytearray()
    while len(buf) < n:
        d = c.recv(min(n - len(buf), 1 << 20))
        if not d:
            return None
        buf += d
    return bytes(buf)


def tcp_receive(c):
    try:
        c.settimeout(120)
        head = recv_exact(c, 40)
        if head is None:
            count("tcp_short")
            return
        (length,) = struct.unpack(">Q", head[:8])
        h, got = hashlib.sha256(), 0
        while got < length:
            d = c.recv(min(length - got, 1 << 20))
            if not d:
                break
            h.update(d)
            got += len(d)
        if got < length:
            count("tcp_short")
            return
        ok = h.digest() == head[8:]
        count("tcp_ok" if ok else "tcp_bad")
        if ok:
            count("tcp_ok_bytes", length)
        c.sendall(b"\1" if ok else b"\0")
    except OSError:
        count("tcp_short")
    finally:
        c.close()


def tcp_server():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5400))
    s.listen(8)
    while True:
        c, _ = s.accept()
        threading.Thread(target=tcp_receive, args=(c,), daemon=True).start()


def tcp_sender():
    while not stop.is_set():
        data = os.urandom(random.randint(1 << 20, 8 << 20))
        t0 = time.monotonic()
        try:
            with socket.create_connection((peer, 5400), timeout=120) as c:
                c.sendall(struct.pack(">Q", len(data)) + hashlib.sha256(data).digest())
                c.sendall(data)
                c.shutdown(socket.SHUT_WR)
                if recv_exact(c, 1) is None:
                    raise OSError("no answer")
            count("tcp_sent")
        except OSError:
            count("tcp_cut")
            stop.wait(1)
        # At most TCP_RATE on average, so the soak does not take every core.
        stop.wait(max(0.1, len(data) * 8 / TCP_RATE - (time.monotonic() - t0)))


def udp_receiver():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", 5401))
    while True:
        d = s.recv(65536)
        count("udp_ok" if len(d) >= 40 and hashlib.sha256(d[32:]).digest() == d[:32] else "udp_bad")


def udp_sender():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq = 0
    while not stop.is_set():
        rest = struct.pack(">Q", seq) + os.urandom(random.randint(0, 1400 - 40))
        try:
            s.sendto(hashlib.sha256(rest).digest() + rest, (peer, 5401))
            count("udp_sent")
        except OSError:
            pass  # no route while the device is being made again
        seq += 1
        stop.wait(0.005)


signal.signal(signal.SIGTERM, lambda *_: stop.set())
for f in (tcp_server, udp_receiver, tcp_sender, udp_sender):
    threading.Thread(target=f, daemon=True).start()
while not stop.wait(5):
    save()
time.sleep(0.2)
save()
