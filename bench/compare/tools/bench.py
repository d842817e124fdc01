#!/usr/bin/env python3
"""Measurement helpers for bench/compare (Python 3 standard library only).

Every subcommand prints one JSON object on stdout, so the shell driver can
collect results without parsing free text. Every server exits by itself
after a deadline, so nothing is left behind if a test goes wrong.

  rr-server   --port P --deadline S          answer fixed-size requests on one TCP connection
  rr-client   --host H --port P --seconds S  back-to-back request/response latency
  udp-recv    --port P --seconds S --run ID  count distinct sequence numbers
  udp-send    --host H --port P --pps N --seconds S --size B --run ID
  xfer-server --port P --deadline S          receive one stream, reply with its length and SHA-256
  xfer-client --host H --port P --file F --timeout S
  make-file   --file F --mb N                deterministic pseudo-random test file
  ping-stats  < ping output                  RTT percentiles of the answered echoes
  iperf       --file F                       throughput and bytes from `iperf3 -J` output
  linkem-stats --file F                      yip-linkem's --stats counters
  nft-stats   --a F --b F                    lib.sh host_impair counters (nft -j) by direction
  cpu         PID...                         utime+stime of the processes, seconds
  row         k=str k:=num @prefix=file...   one JSON result row
  get         KEY < json                     one field of a JSON object
"""

import argparse
import hashlib
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import time


def out(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def listener(port):
    """A TCP listener on every address, IPv4 and IPv6."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(1)
    return s


def connect(host, port, timeout):
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


# ---------------------------------------------------------------- request/response


def rr_server(a):
    ls = listener(a.port)
    ls.settimeout(a.deadline)
    try:
        c, _ = ls.accept()
    except socket.timeout:
        out({"status": "no connection"})
        return
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.settimeout(a.deadline)
    n = 0
    try:
        while True:
            req = recv_exact(c, a.size)
            if req is None:
                break
            c.sendall(req)
            n += 1
    except OSError:
        pass
    out({"status": "ok", "answered": n})


def rr_client(a):
    try:
        s = connect(a.host, a.port, 10)
    except OSError as e:
        out({"status": "connect failed: %s" % e})
        return
    s.settimeout(a.stall)
    msg = os.urandom(a.size)
    lat = []
    status = "ok"
    end = time.monotonic() + a.seconds
    try:
        while time.monotonic() < end:
            t0 = time.perf_counter_ns()
            s.sendall(msg)
            if recv_exact(s, a.size) is None:
                status = "connection closed"
                break
            lat.append((time.perf_counter_ns() - t0) / 1000.0)
    except socket.timeout:
        status = "stalled > %g s" % a.stall
    except OSError as e:
        status = "error: %s" % e
    s.close()
    res = {"status": status if lat else "no answer", "count": len(lat)}
    if lat:
        res.update(p50_us=round(pct(lat, 50), 1), p99_us=round(pct(lat, 99), 1),
                   max_us=round(max(lat), 1))
    out(res)


# ---------------------------------------------------------------- UDP delivered loss

HDR = struct.Struct("!QQ")  # run id, sequence number


def udp_recv(a):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("::", a.port))
    seen = set()
    dups = 0
    other = 0
    end = time.monotonic() + a.seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        # Once the stream has started, a pause of --idle seconds means it ended.
        s.settimeout(min(left, a.idle) if seen else left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if len(data) < HDR.size:
            other += 1
            continue
        run, seq = HDR.unpack_from(data)
        if run != a.run:
            other += 1
        elif seq in seen:
            dups += 1
        else:
            seen.add(seq)
    out({"received": len(seen), "duplicates": dups, "foreign": other})


def udp_send(a):
    addr = socket.getaddrinfo(a.host, a.port, type=socket.SOCK_DGRAM)[0]
    s = socket.socket(addr[0], socket.SOCK_DGRAM)
    pad = b"\0" * max(0, a.size - HDR.size)
    total = int(a.pps * a.seconds)
    t0 = time.monotonic()
    errors = 0
    for seq in range(total):
        due = t0 + seq / a.pps
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        try:
            s.sendto(HDR.pack(a.run, seq) + pad, addr[4])
        except OSError:
            errors += 1
    out({"sent": total, "send_errors": errors,
         "seconds": round(time.monotonic() - t0, 3)})


# ---------------------------------------------------------------- bulk file copy


def xfer_server(a):
    ls = listener(a.port)
    ls.settimeout(a.deadline)
    try:
        c, _ = ls.accept()
    except socket.timeout:
        out({"status": "no connection"})
        return
    c.settimeout(a.deadline)
    t0 = time.monotonic()
    h = hashlib.sha256()
    n = 0

    class Stopped(Exception):
        pass

    def stop(_sig, _frame):
        raise Stopped()

    # Stopped by the driver after the client gave up: still say how far it got.
    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            chunk = c.recv(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            n += len(chunk)
        c.sendall(("%d %s\n" % (n, h.hexdigest())).encode())
        status = "ok"
    except Stopped:
        status = "stopped"
    except OSError as e:
        status = "error: %s" % e
    out({"status": status, "bytes": n, "seconds": round(time.monotonic() - t0, 3)})


def xfer_client(a):
    h = hashlib.sha256()
    size = 0
    with open(a.file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    want = h.hexdigest()
    t0 = time.monotonic()
    deadline = t0 + a.timeout
    sent = 0

    def left():
        r = deadline - time.monotonic()
        if r <= 0:
            raise socket.timeout()
        return r

    try:
        s = connect(a.host, a.port, min(10.0, a.timeout))
        with open(a.file, "rb") as f:
            while True:
                chunk = f.read(1 << 18)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    s.settimeout(left())
                    k = s.send(view)
                    view = view[k:]
                    sent += k
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while not reply.endswith(b"\n"):
            s.settimeout(left())
            chunk = s.recv(256)
            if not chunk:
                break
            reply += chunk
        secs = time.monotonic() - t0
    except socket.timeout:
        out({"status": "timeout", "timeout_s": a.timeout, "sent_bytes": sent, "size": size})
        return
    except OSError as e:
        out({"status": "error: %s" % e, "sent_bytes": sent, "size": size})
        return
    parts = reply.decode(errors="replace").split()
    ok = len(parts) == 2 and parts[0] == str(size) and parts[1] == want
    out({"status": "ok" if ok else "sha256 mismatch", "seconds": round(secs, 3),
         "size": size, "sha256": want})


def make_file(a):
    rng = random.Random(20240601)
    with open(a.file, "wb") as f:
        for _ in range(a.mb):
            f.write(rng.randbytes(1 << 20))
    out({"file": a.file, "bytes": a.mb << 20})


# ---------------------------------------------------------------- parsers


def ping_stats(_a):
    rtts = []
    seqs = set()
    sent = None
    for line in sys.stdin:
        m = re.search(r"icmp_seq=(\d+).* time=([\d.]+) ms", line)
        if m and "DUP!" not in line:
            if m.group(1) not in seqs:
                seqs.add(m.group(1))
                rtts.append(float(m.group(2)))
        m = re.match(r"(\d+) packets transmitted", line)
        if m:
            sent = int(m.group(1))
    res = {"sent": sent or 0, "received": len(rtts)}
    if sent:
        res["loss_pct"] = round(100.0 * (sent - len(rtts)) / sent, 2)
    if rtts:
        res.update(p50_ms=round(pct(rtts, 50), 3), p99_ms=round(pct(rtts, 99), 3))
    out(res)


def iperf(a):
    try:
        with open(a.file) as f:
            text = f.read()
        # iperf3 may print a second JSON object or junk after a failure; take the first.
        j, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except (OSError, ValueError):
        out({"status": "no result"})
        return
    if j.get("error"):
        out({"status": "iperf3: %s" % j["error"]})
        return
    end = j.get("end", {})
    rcv = end.get("sum_received", {})
    snd = end.get("sum_sent", {})
    if not rcv.get("bytes"):
        out({"status": "no data"})
        return
    out({"status": "ok", "mbps": round(rcv["bits_per_second"] / 1e6, 3),
         "bytes": rcv["bytes"], "seconds": round(rcv.get("seconds", 0), 3),
         "retransmits": snd.get("retransmits")})


def linkem_stats(a):
    """yip-linkem --stats lines: "a2b rx=N tx=N lost=N dup=N reordered=N queue_drops=N"."""
    res = {}
    try:
        with open(a.file) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                for kv in parts[1:]:
                    k, _, v = kv.partition("=")
                    if v.isdigit():
                        res["%s_%s" % (parts[0], k)] = int(v)
    except OSError:
        res["status"] = "no stats"
    out(res)


def nft_stats(a):
    """Counters of lib.sh's host_impair tables, from `nft -j list counters` in
    A (--a) and B (--b), by direction: a2b_in_* are B's ingress drops (loss of
    frames going A to B), a2b_out_* A's egress drops (packets A sent); b2a_*
    the other way round. *_seen/*_lost are packets, *_bytes/*_bytes_lost bytes,
    *_gso/*_gso_bytes the sent packets longer than one frame (GSO)."""
    def counters(path):
        res = {}
        try:
            with open(path) as f:
                j = json.load(f)
        except (OSError, ValueError):
            return res
        for item in j.get("nftables", []):
            c = item.get("counter")
            if c:
                res[c["name"]] = (c.get("packets", 0), c.get("bytes", 0))
        return res
    ca, cb = counters(a.a), counters(a.b)
    res = {}
    for dr, rx, tx in (("a2b", cb, ca), ("b2a", ca, cb)):
        for side, src in (("in", rx), ("out", tx)):
            if side + "_seen" in src:
                seen, lost = src[side + "_seen"], src.get(side + "_lost", (0, 0))
                res["%s_%s_seen" % (dr, side)] = seen[0]
                res["%s_%s_lost" % (dr, side)] = lost[0]
                res["%s_%s_bytes" % (dr, side)] = seen[1]
                res["%s_%s_bytes_lost" % (dr, side)] = lost[1]
                if side + "_gso" in src:
                    res["%s_%s_gso" % (dr, side)] = src[side + "_gso"][0]
                    res["%s_%s_gso_bytes" % (dr, side)] = src[side + "_gso"][1]
    if not ca and not cb:
        res["status"] = "no counters"
    out(res)


def cpu(a):
    tck = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in a.pids:
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # after the comm: state is field 3, utime 14, stime 15 (1-based)
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    out({"cpu_s": total / tck})


def row(a):
    """KEY=VALUE keeps VALUE as a string; KEY:=VALUE makes it a number (an
    empty or non-numeric VALUE leaves KEY out); @PREFIX=FILE merges the JSON
    object in FILE with every key renamed PREFIX_key (a missing or unreadable
    file gives PREFIX_status="no result")."""
    r = {}
    for kv in a.pairs:
        k, _, v = kv.partition("=")
        if k.startswith("@"):
            try:
                with open(v) as f:
                    j, _ = json.JSONDecoder().raw_decode(f.read().strip())
                if not isinstance(j, dict):
                    raise ValueError
            except (OSError, ValueError):
                j = {"status": "no result"}
            for jk, jv in j.items():
                r["%s_%s" % (k[1:], jk)] = jv
        elif k.endswith(":"):
            try:
                n = float(v)
            except ValueError:
                continue
            if n != n or n in (float("inf"), float("-inf")):
                continue
            r[k[:-1]] = int(n) if n.is_integer() and "." not in v else n
        elif v != "":
            r[k] = v
    out(r)


def get(a):
    """Print field KEY of the JSON object on stdin (empty if absent)."""
    try:
        j = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        j = {}
    v = j.get(a.key, "")
    print("" if v is None else v)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)

    q = sub.add_parser("rr-server")
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--size", type=int, default=64)
    q.add_argument("--deadline", type=float, default=60)
    q.set_defaults(fn=rr_server)

    q = sub.add_parser("rr-client")
    q.add_argument("--host", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--size", type=int, default=64)
    q.add_argument("--seconds", type=float, default=10)
    q.add_argument("--stall", type=float, default=10)
    q.set_defaults(fn=rr_client)

    q = sub.add_parser("udp-recv")
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--seconds", type=float, required=True)
    q.add_argument("--run", type=int, required=True)
    q.add_argument("--idle", type=float, default=1.0)
    q.set_defaults(fn=udp_recv)

    q = sub.add_parser("udp-send")
    q.add_argument("--host", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--pps", type=float, default=1000)
    q.add_argument("--seconds", type=float, default=3)
    q.add_argument("--size", type=int, default=1200)
    q.add_argument("--run", type=int, required=True)
    q.set_defaults(fn=udp_send)

    q = sub.add_parser("xfer-server")
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--deadline", type=float, default=60)
    q.set_defaults(fn=xfer_server)

    q = sub.add_parser("xfer-client")
    q.add_argument("--host", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--file", required=True)
    q.add_argument("--timeout", type=float, default=30)
    q.set_defaults(fn=xfer_client)

    q = sub.add_parser("make-file")
    q.add_argument("--file", required=True)
    q.add_argument("--mb", type=int, default=100)
    q.set_defaults(fn=make_file)

    q = sub.add_parser("ping-stats")
    q.set_defaults(fn=ping_stats)

    q = sub.add_parser("iperf")
    q.add_argument("--file", required=True)
    q.set_defaults(fn=iperf)

    q = sub.add_parser("linkem-stats")
    q.add_argument("--file", required=True)
    q.set_defaults(fn=linkem_stats)

    q = sub.add_parser("nft-stats")
    q.add_argument("--a", required=True)
    q.add_argument("--b", required=True)
    q.set_defaults(fn=nft_stats)

    q = sub.add_parser("cpu")
    q.add_argument("pids", nargs="*")
    q.set_defaults(fn=cpu)

    q = sub.add_parser("row")
    q.add_argument("pairs", nargs="*")
    q.set_defaults(fn=row)

    q = sub.add_parser("get")
    q.add_argument("key")
    q.set_defaults(fn=get)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
