#!/usr/bin/env python3
"""The TLS records a server sent, per connection, from a capture.

    records.py PCAP SERVER_IP SERVER_PORT

Reads a pcap (Ethernet or Linux cooked v1 or v2, IPv4, TCP), puts each connection's
server-to-client bytes back in sequence order (retransmitted bytes once),
and prints one line per connection, in the order they began:

    <client port> <type>:<length> <type>:<length> ...

with each record's content type and body length, up to the first byte that
is no record header (then "?"). For tests/netns/reality_splice.sh, which
compares the front's answer to a sealed hello with the site's own.
"""
import struct
import sys


def packets(path):
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    link = struct.unpack_from(endian + "I", data, 20)[0]
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if link == 1 and len(pkt) >= 14 and pkt[12:14] == b"\x08\x00":
            yield pkt[14:]
        elif link == 113 and len(pkt) >= 16 and pkt[14:16] == b"\x08\x00":
            yield pkt[16:]
        elif link == 276 and len(pkt) >= 20 and pkt[0:2] == b"\x08\x00":
            yield pkt[20:]


def main():
    path, server, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ip = bytes(int(x) for x in server.split("."))
    flows, order = {}, []
    for p in packets(path):
        if len(p) < 20 or p[9] != 6 or p[12:16] != ip:
            continue
        ihl = (p[0] & 15) * 4
        total = struct.unpack_from(">H", p, 2)[0]
        tcp = p[ihl:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        if sport != port:
            continue
        flags = tcp[13]
        payload = tcp[(tcp[12] >> 4) * 4:]
        f = flows.get(dport)
        if f is None:
            f = flows[dport] = {"isn": None, "segs": {}}
            order.append(dport)
        if flags & 0x02:  # SYN: the data starts after it
            f["isn"] = (seq + 1) & 0xFFFFFFFF
        if payload:
            f["segs"].setdefault(seq, payload)
    for dport in order:
        f = flows[dport]
        if f["isn"] is None:
            continue
        stream, at = b"", f["isn"]
        for seq in sorted(f["segs"], key=lambda s: (s - f["isn"]) & 0xFFFFFFFF):
            seg = f["segs"][seq]
            rel = (seq - at) & 0xFFFFFFFF
            if rel > 1 << 31:  # older than what is assembled: its new bytes only
                skip = (at - seq) & 0xFFFFFFFF
                seg, rel = seg[skip:], 0
            if rel != 0:
                break  # a hole: the rest is not whole
            stream += seg
            at = (at + len(seg)) & 0xFFFFFFFF
        out, off = [], 0
        while off + 5 <= len(stream):
            t, length = stream[off], struct.unpack_from(">H", stream, off + 3)[0]
            if t not in (20, 21, 22, 23) or stream[off + 1] != 3:
                out.append("?")
                break
            out.append("%d:%d" % (t, length))
            off += 5 + length
        print(dport, " ".join(out))


if __name__ == "__main__":
    main()
