#!/usr/bin/env python3
"""What a tunnel does to one inner TCP stream, from two captures of its
inner devices: A's (where the sender's segments enter) and B's (where they
come out). Python stdlib only.

    inner_delay.py A.pcap B.pcap [--port 5201]

For every data segment A sent (super-packets are cut at the MSS, as the
tunnel cuts them), the time from its first transmission at A to the first
packet at B that carries its first byte. Prints the distribution of that
delay, how many segments came out later than a segment sent after them
(reordered), and how many arrived only after A sent them again.
"""
import bisect
import struct
import sys


def packets(path):
    """(time, ip packet bytes) from a pcap of a TUN device (LINKTYPE_RAW) or Ethernet."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
    nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
    linktype = struct.unpack(end + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        pkt = data[off:off + incl]
        off += incl
        t = sec + frac / (1e9 if nano else 1e6)
        if linktype == 1:
            pkt = pkt[14:]
        elif linktype == 113:  # Linux cooked
            pkt = pkt[16:]
        yield t, pkt


def tcp_segments(path, port):
    """(time, source port, seq, payload length, MSS option or 0) of segments towards port."""
    for t, p in packets(path):
        if len(p) < 20 or p[0] >> 4 != 4 or p[9] != 6:
            continue
        ihl = (p[0] & 15) * 4
        total = struct.unpack(">H", p[2:4])[0]
        if len(p) < ihl + 20:
            continue
        sport, dport = struct.unpack(">HH", p[ihl:ihl + 4])
        if dport != port:
            continue
        seq = struct.unpack(">I", p[ihl + 4:ihl + 8])[0]
        doff = (p[ihl + 12] >> 4) * 4
        mss = 0
        if p[ihl + 13] & 0x02:  # SYN: look for the MSS option
            o = ihl + 20
            while o + 1 < min(ihl + doff, len(p)):
                kind = p[o]
                if kind == 0:
                    break
                if kind == 1:
                    o += 1
                    continue
                if kind == 2 and o + 4 <= len(p):
                    mss = struct.unpack(">H", p[o + 2:o + 4])[0]
                size = p[o + 1]
                if size < 2:
                    break
                o += size
        yield t, sport, seq, total - ihl - doff, mss


def main():
    args = sys.argv[1:]
    port = 5201
    if "--port" in args:
        i = args.index("--port")
        port = int(args[i + 1])
        del args[i:i + 2]
    a_path, b_path = args[:2]
    a = list(tcp_segments(a_path, port))
    b = list(tcp_segments(b_path, port))
    # The stream with the most bytes (iperf3 also opens a control connection).
    sent = {}
    for _, sp, _, plen, _ in a:
        sent[sp] = sent.get(sp, 0) + max(plen, 0)
    if not sent or not b:
        print("no data segments in the captures")
        return
    flow = max(sent, key=sent.get)
    syn_mss = [m for _, sp, _, _, m in a if sp == flow and m]
    a = [(t, seq, plen) for t, sp, seq, plen, _ in a if sp == flow and plen > 0]
    b = [(t, seq, plen) for t, sp, seq, plen, _ in b if sp == flow and plen > 0]
    if not syn_mss:
        print("the capture missed the stream's SYN (its MSS)")
        return
    # yip clamps the MSS on the SYN after the capture point at A: take the
    # smallest full-sized segment seen at B instead when it is smaller.
    small = [plen for _, _, plen in b if plen <= syn_mss[0]]
    mss = max(set(small), key=small.count) if small else syn_mss[0]
    base = a[0][1]
    rel = lambda s: (s - base) & 0xFFFFFFFF
    first, resent = {}, {}
    for t, seq, plen in a:
        for o in range(0, plen, mss):
            s = rel(seq + o)
            if s >= 1 << 31:
                continue
            if s in first:
                resent.setdefault(s, t)
            else:
                first[s] = t
    starts = sorted(first)
    arrival = {}
    for t, seq, plen in b:
        lo = rel(seq)
        if lo >= 1 << 31:
            continue
        i = bisect.bisect_left(starts, lo)
        while i < len(starts) and starts[i] < lo + plen:
            arrival.setdefault(starts[i], t)
            i += 1
    delays, order = [], []
    late_after_resend = missing = 0
    for s in starts:
        tb = arrival.get(s)
        if tb is None:
            missing += 1
            continue
        if s in resent and resent[s] < tb:
            late_after_resend += 1
            continue
        delays.append(tb - first[s])
        order.append((first[s], tb))
    if not delays:
        print("no segment matched")
        return
    ds = sorted(delays)
    q = lambda p: ds[min(len(ds) - 1, int(p * len(ds)))] * 1000
    order.sort()
    reordered = 0
    latest = 0.0
    lateness = []
    for _, tb in order:
        if tb < latest:
            reordered += 1
            lateness.append(latest - tb)
        else:
            latest = tb
    print("segments %d (mss %d), delivered %d: one-way ms min %.2f p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f"
          % (len(starts), mss, len(ds), ds[0] * 1000, q(0.5), q(0.9), q(0.99), q(0.999), ds[-1] * 1000))
    med = ds[len(ds) // 2]
    print("  later than the median by more than 2/5/10/20/50 ms: %s"
          % " / ".join(str(sum(1 for d in ds if d > med + x / 1000)) for x in (2, 5, 10, 20, 50)))
    if lateness:
        lt = sorted(lateness)
        print("  out of order by (ms): p50 %.2f p90 %.2f p99 %.2f max %.2f"
              % tuple(lt[min(len(lt) - 1, int(x * len(lt)))] * 1000 for x in (0.5, 0.9, 0.99, 1.0)))
    print("  out of order (a later-sent segment came out first): %d; came out only after A sent it again: %d; "
          "not seen at B in the capture: %d" % (reordered, late_after_resend, missing))


if __name__ == "__main__":
    main()
