#!/usr/bin/env python3
"""Writes the seed corpora of the membership fuzzers (tests/fuzz/corpus/member_*/).

Each seed is a well-formed object as src/wire/member.h lays it out, with a
signature of placeholder bytes (the decoders do not verify signatures; the
fuzzers sign again what they accept). The text-form seeds are a byte
picking the kind wanted (fuzz_member_armor.c) and then some of the objects
in their armor, with comments and CRLF line ends. Run it again after
changing a layout.
"""
import base64
import os
import struct

CERT, ROOTS, REVOCATIONS, RECORD, REQUEST = 0xC1, 0xC2, 0xC3, 0xC4, 0xC5
LABELS = {CERT: "CERTIFICATE", ROOTS: "ROOT SET", REVOCATIONS: "REVOCATION LIST",
          RECORD: "MEMBER RECORD", REQUEST: "CERTIFICATE REQUEST"}
SIG = bytes(range(64))


def obj(kind, body):
    """Header (kind, version 1, total length), body, signature."""
    n = 6 + len(body) + 64
    return bytes([kind, 1]) + struct.pack("<I", n) + body + SIG


def name(s):
    return bytes([len(s)]) + s.encode()


def addr4(ip, port):
    return bytes([4]) + struct.pack("<H", port) + bytes(ip)


def addr6(ip, port):
    return bytes([6]) + struct.pack("<H", port) + bytes(ip)


V6 = [0x20, 0x01, 0x0d, 0xb8] + [0] * 11 + [1]


def cert(network="example", member="alice laptop", prefixes=(), groups=(), nb=1700000000,
         na=1731536000, key=0x11):
    body = name(network) + name(member) + bytes([key]) * 32 + bytes([key + 1]) * 32
    body += struct.pack("<QQ", nb, na) + bytes([len(prefixes)])
    for p in prefixes:
        body += p
    body += bytes([len(groups)])
    for g in groups:
        body += name(g)
    return obj(CERT, body)


def roots(n_roots=2, serial=7):
    body = name("example") + struct.pack("<QQ", serial, 1700000000) + bytes([n_roots])
    for i in range(n_roots):
        body += bytes([0x20 + i]) * 32
        addrs = [addr4([192, 0, 2, i + 1], 51820), addr6(V6[:15] + [i + 2], 443)][: 1 + i % 2]
        body += bytes([len(addrs)]) + b"".join(addrs)
    return obj(ROOTS, body)


def revocations(n):
    entries = sorted(bytes([1 + i % 2]) + bytes([i // 2 + 1]) * 32 for i in range(n))
    body = name("example") + struct.pack("<QQH", 3, 1700000000, n) + b"".join(entries)
    return obj(REVOCATIONS, body)


def record(c, endpoints):
    body = c + struct.pack("<QQ", 1700000000123, 1700003600) + bytes([len(endpoints)])
    return obj(RECORD, body + b"".join(endpoints))


def request():
    return obj(REQUEST, bytes([0x11]) * 32 + bytes([0x12]) * 32)


def armor(o, comment=True, crlf=False):
    b64 = base64.b64encode(o).decode()
    lines = ["# a seed"] if comment else []
    lines.append("-----BEGIN YIP %s-----" % LABELS[o[0]])
    lines += [b64[i:i + 64] for i in range(0, len(b64), 64)]
    lines.append("-----END YIP %s-----" % LABELS[o[0]])
    return ("\r\n" if crlf else "\n").join(lines).encode() + b"\n"


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    p4 = bytes([4, 24, 10, 1, 0, 0])
    p6 = bytes([6, 64, 0xfd, 0, 0, 1, 0, 0, 0, 0] + [0] * 8)
    small = cert(prefixes=[p4])
    full = cert(network="n" * 63, member="M" * 63,
                prefixes=[bytes([6, 128] + [0xfd] + [i] * 15) for i in range(8)],
                groups=[chr(ord("a") + i) * 31 for i in range(8)])
    seeds = {
        "member_cert": {"small": small, "two_prefixes": cert(prefixes=[p4, p6], groups=["admins"]),
                        "none": cert(), "largest": full},
        "member_roots": {"one": roots(1), "two": roots(2), "many": roots(32)},
        "member_revocations": {"empty": revocations(0), "three": revocations(3),
                               "many": revocations(200)},
        "member_record": {"typical": record(small, [addr4([203, 0, 113, 5], 40000),
                                                    addr6(V6, 51820)]),
                          "bare": record(cert(), []),
                          "largest": record(full, [addr6(V6[:15] + [i + 1], 1000 + i)
                                                   for i in range(8)])},
        "member_request": {"request": request()},
        "member_armor": {"cert": b"\x01" + armor(small), "roots": b"\x02" + armor(roots(2), crlf=True),
                         "revocations": b"\x00" + armor(revocations(3), comment=False),
                         "record": b"\x04" + armor(record(small, [addr4([203, 0, 113, 5], 1)])),
                         "request": b"\x05" + armor(request())},
    }
    for corpus, files in seeds.items():
        d = os.path.join(here, corpus)
        os.makedirs(d, exist_ok=True)
        for fname, data in files.items():
            with open(os.path.join(d, fname), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
