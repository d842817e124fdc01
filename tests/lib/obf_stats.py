#!/usr/bin/env python3
"""Statistics over a capture of one UDP flow, for tests/netns/obf_dpi.sh.

Usage: obf_stats.py PCAP PORT_A PORT_B KINDS|-|--hex
       obf_stats.py PCAP PORT_A PORT_B --random-control OUT FLOWS

Reads the UDP payloads between the two ports from PCAP (classic pcap,
Ethernet, IPv4). KINDS is a file with one word per payload, in capture
order (what build/tests/yip-obfpeek makes of them with the network's key:
init, resp, cookie, data, ..., junk, bad); with "-" the payloads are plain
yip and their first byte names them; --hex prints the payloads, one hex
line each, for yip-obfpeek. --random-control writes OUT, a capture of
FLOWS flows shaped like the first 64 datagrams of this one (the same
lengths, directions and spacing) but between other addresses and ports and
carrying uniformly random bytes: what a classifier makes of random data of
this flow's shape. Otherwise prints, one "key value" per line:

  datagrams   how many payloads
  bad         payloads the key does not open (obfuscated runs only)
  handshakes  Init, Resp and Cookie datagrams
  hs_maxshare the largest share of handshakes that have one same length
  hs_lengths  distinct handshake lengths
  chi2_max    the largest chi-square statistic of the byte values at one of
              offsets 0..31 against the uniform distribution (255 degrees
              of freedom), and chi2_at its offset
  chi2_crit   the critical value: a family-wise error rate of 0.001 over
              the 32 tests (Bonferroni: 0.001 / 32 each)
  uniform     yes if every offset stays under chi2_crit
"""
import math
import struct
import sys

OFFSETS = 32
ALPHA = 0.001


def payloads(path, port_a, port_b, shape=False):
    """The flow's UDP payloads; with shape, (time, from port_a, length) instead."""
    out = []
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        link = struct.unpack(endian + "I", hdr[20:24])[0]
        if link != 1:
            sys.exit("obf_stats: not an Ethernet capture (link type %d)" % link)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            sec, usec, incl = struct.unpack(endian + "IIII", rec)[:3]
            pkt = f.read(incl)
            if len(pkt) < 14 + 20 + 8 or pkt[12:14] != b"\x08\x00":
                continue
            ip = pkt[14:]
            ihl = (ip[0] & 15) * 4
            if ip[9] != 17:
                continue
            udp = ip[ihl:]
            sport, dport, ulen = struct.unpack(">HHH", udp[:6])
            if {sport, dport} != {port_a, port_b}:
                continue
            if shape:
                out.append((sec + usec / 1e6, sport == port_a, ulen - 8))
            else:
                out.append(bytes(udp[8:ulen]))
    return out


def ip_checksum(hdr):
    s = sum(struct.unpack(">10H", hdr))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def random_control(path, port_a, port_b, out_path, flows):
    """Writes FLOWS random-payload copies of the flow's first 64 datagrams."""
    import os
    import random

    shape = payloads(path, port_a, port_b, shape=True)[:64]
    if not shape:
        sys.exit("obf_stats: no datagrams between the ports")
    rnd = random.SystemRandom()
    t0 = shape[0][0]
    with open(out_path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n in range(flows):
            a = bytes([10, 200 + n // 65536 % 50, n // 256 % 256, n % 256])
            b = bytes([10, 250, n // 256 % 256, n % 256])
            # Ports nDPI has no guess for, like the test's own: high and random.
            pa, pb = rnd.randrange(40000, 60000), rnd.randrange(40000, 60000)
            for t, from_a, length in shape:
                src, dst, sp, dp = (a, b, pa, pb) if from_a else (b, a, pb, pa)
                udp = struct.pack(">HHHH", sp, dp, 8 + length, 0) + os.urandom(length)
                ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                                 src, dst)
                ip = ip[:10] + struct.pack(">H", ip_checksum(ip)) + ip[12:]
                frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp
                ts = 1000 + n * 10 + (t - t0)
                f.write(struct.pack("<IIII", int(ts), int(ts % 1 * 1e6), len(frame), len(frame)))
                f.write(frame)


def chi2_critical(df, alpha):
    """Upper alpha quantile of chi-square(df), Wilson-Hilferty (exact to < 0.5 % here)."""
    # Inverse of the standard normal's upper tail by bisection on erfc.
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(mid / math.sqrt(2)) > alpha:
            lo = mid
        else:
            hi = mid
    z = (lo + hi) / 2
    h = 2.0 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def main():
    path, port_a, port_b, kinds_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if kinds_path == "--random-control":
        random_control(path, port_a, port_b, sys.argv[5], int(sys.argv[6]))
        return
    data = payloads(path, port_a, port_b)
    if kinds_path == "--hex":
        sys.stdout.write("".join(d.hex() + "\n" for d in data))
        return
    if kinds_path == "-":
        names = {1: "init", 2: "resp", 3: "cookie"}
        kinds = [names.get(d[0], "data") if d else "bad" for d in data]
    else:
        with open(kinds_path) as f:
            kinds = f.read().split()
        if len(kinds) != len(data):
            sys.exit("obf_stats: %d kinds for %d payloads" % (len(kinds), len(data)))
    hs = [len(d) for d, k in zip(data, kinds) if k in ("init", "resp", "cookie")]
    share = 0.0
    if hs:
        counts = {}
        for n in hs:
            counts[n] = counts.get(n, 0) + 1
        share = max(counts.values()) / len(hs)
    worst, at = 0.0, -1
    for i in range(OFFSETS):
        col = [d[i] for d in data if len(d) > i]
        n = len(col)
        if n == 0:
            continue
        hist = [0] * 256
        for b in col:
            hist[b] += 1
        e = n / 256.0
        chi2 = sum((c - e) ** 2 for c in hist) / e
        if chi2 > worst:
            worst, at = chi2, i
    crit = chi2_critical(255, ALPHA / OFFSETS)
    print("datagrams", len(data))
    print("bad", sum(1 for k in kinds if k == "bad"))
    print("handshakes", len(hs))
    print("hs_maxshare %.4f" % share)
    print("hs_lengths", len(set(hs)))
    print("chi2_max %.1f" % worst)
    print("chi2_at", at)
    print("chi2_crit %.1f" % crit)
    print("uniform", "yes" if worst < crit else "no")


if __name__ == "__main__":
    main()
