#!/usr/bin/env python3
"""ClientHellos in a capture, field by field: the reference side of the TLS
fingerprint tests (tests/tls/capture_hello.sh makes the captures).

Usage: hello.py report PCAP [--port P] [--from ADDR] [--json]
       hello.py hex PCAP [INDEX] [--port P] [--from ADDR]
       hello.py compare PCAP_A PCAP_B [--port P] [--from ADDR] [--from-b ADDR]
                [--names A,B] [--require F,...] [--rows F,...]
                [--min-hellos K] [--orders D/N]

Reads a classic pcap (Ethernet or Linux cooked, IPv4 or IPv6), puts each TCP
connection to PORT (default 443) back together from the client's segments,
and parses the first handshake message of each as a ClientHello (it may span
segments and records). --from keeps the connections from one client address
(--from-b, for compare's second capture, if it is another), so that one
capture may hold two clients.

report prints every hello: record and handshake lengths, legacy version,
session id length, cipher suites, extensions in wire order with their
lengths and what they hold (SNI, groups, key shares and their lengths,
signature algorithms, ALPN, supported versions, ALPS, certificate
compression, ECH and its lengths, padding, PSK modes, ...), JA4 (FoxIO's
definition: ../shared/reference/mimicry.md B.1), JA4_r and JA3; then what
the hellos share and what varies across them: which extension sits at each
position, how many distinct orders, the GREASE values at each place, the
lengths. --json prints the same as one JSON object.

hex prints one hello (default the first) as a hex dump, record header
included.

compare puts two captures side by side, one row per field of the summary
(GREASE values written as GREASE, order ignored where the client permutes),
and marks the rows that differ (NO) and the statistics of random choices,
which are shown but not compared (~). With --require it exits 1 when one of the
named rows differs (the names are the first column), for a test; --rows
prints only the rows named (each still compared for --require). Rows that
count hellos say "all" when every hello has the thing counted. It also
exits 1 when a capture has fewer than K hellos or one it cannot parse
(--min-hellos), or when the extension order changes between fewer than D
of N consecutive hellos in either (--orders; at least N hellos needed).
"""
import hashlib
import json
import struct
import sys
from collections import Counter, OrderedDict

CIPHERS = {
    0x1301: "TLS_AES_128_GCM_SHA256",
    0x1302: "TLS_AES_256_GCM_SHA384",
    0x1303: "TLS_CHACHA20_POLY1305_SHA256",
    0xC02B: "ECDHE_ECDSA_AES_128_GCM_SHA256",
    0xC02F: "ECDHE_RSA_AES_128_GCM_SHA256",
    0xC02C: "ECDHE_ECDSA_AES_256_GCM_SHA384",
    0xC030: "ECDHE_RSA_AES_256_GCM_SHA384",
    0xCCA9: "ECDHE_ECDSA_CHACHA20_POLY1305",
    0xCCA8: "ECDHE_RSA_CHACHA20_POLY1305",
    0xCCAA: "DHE_RSA_CHACHA20_POLY1305",
    0xC013: "ECDHE_RSA_AES_128_CBC_SHA",
    0xC014: "ECDHE_RSA_AES_256_CBC_SHA",
    0xC009: "ECDHE_ECDSA_AES_128_CBC_SHA",
    0xC00A: "ECDHE_ECDSA_AES_256_CBC_SHA",
    0xC023: "ECDHE_ECDSA_AES_128_CBC_SHA256",
    0xC024: "ECDHE_ECDSA_AES_256_CBC_SHA384",
    0xC027: "ECDHE_RSA_AES_128_CBC_SHA256",
    0xC028: "ECDHE_RSA_AES_256_CBC_SHA384",
    0x009C: "RSA_AES_128_GCM_SHA256",
    0x009D: "RSA_AES_256_GCM_SHA384",
    0x009E: "DHE_RSA_AES_128_GCM_SHA256",
    0x009F: "DHE_RSA_AES_256_GCM_SHA384",
    0x002F: "RSA_AES_128_CBC_SHA",
    0x0035: "RSA_AES_256_CBC_SHA",
    0x003C: "RSA_AES_128_CBC_SHA256",
    0x003D: "RSA_AES_256_CBC_SHA256",
    0x0033: "DHE_RSA_AES_128_CBC_SHA",
    0x0039: "DHE_RSA_AES_256_CBC_SHA",
    0x0067: "DHE_RSA_AES_128_CBC_SHA256",
    0x006B: "DHE_RSA_AES_256_CBC_SHA256",
    0x00FF: "EMPTY_RENEGOTIATION_INFO_SCSV",
}

EXTENSIONS = {
    0x0000: "server_name",
    0x0005: "status_request",
    0x000A: "supported_groups",
    0x000B: "ec_point_formats",
    0x000D: "signature_algorithms",
    0x0010: "alpn",
    0x0012: "signed_certificate_timestamp",
    0x0015: "padding",
    0x0016: "encrypt_then_mac",
    0x0017: "extended_master_secret",
    0x001B: "compress_certificate",
    0x001C: "record_size_limit",
    0x0022: "delegated_credentials",
    0x0023: "session_ticket",
    0x0029: "pre_shared_key",
    0x002A: "early_data",
    0x002B: "supported_versions",
    0x002C: "cookie",
    0x002D: "psk_key_exchange_modes",
    0x0031: "post_handshake_auth",
    0x0032: "signature_algorithms_cert",
    0x0033: "key_share",
    0x0039: "quic_transport_parameters",
    0x3374: "next_protocol_negotiation",
    0x4469: "application_settings_old",
    0x44CD: "application_settings",
    0xCA34: "trust_anchors",
    0xFE0D: "encrypted_client_hello",
    0xFF01: "renegotiation_info",
}

GROUPS = {
    0x0017: "secp256r1",
    0x0018: "secp384r1",
    0x0019: "secp521r1",
    0x001D: "x25519",
    0x001E: "x448",
    0x0100: "ffdhe2048",
    0x0101: "ffdhe3072",
    0x0102: "ffdhe4096",
    0x0103: "ffdhe6144",
    0x0104: "ffdhe8192",
    0x0200: "MLKEM512",
    0x0201: "MLKEM768",
    0x0202: "MLKEM1024",
    0x11EB: "SecP256r1MLKEM768",
    0x11EC: "X25519MLKEM768",
    0x11ED: "SecP384r1MLKEM1024",
    0x6399: "X25519Kyber768Draft00",
}

SIGALGS = {
    0x0201: "rsa_pkcs1_sha1",
    0x0203: "ecdsa_sha1",
    0x0301: "rsa_pkcs1_sha224",
    0x0303: "ecdsa_sha224",
    0x0401: "rsa_pkcs1_sha256",
    0x0403: "ecdsa_secp256r1_sha256",
    0x0501: "rsa_pkcs1_sha384",
    0x0503: "ecdsa_secp384r1_sha384",
    0x0601: "rsa_pkcs1_sha512",
    0x0603: "ecdsa_secp521r1_sha512",
    0x0804: "rsa_pss_rsae_sha256",
    0x0805: "rsa_pss_rsae_sha384",
    0x0806: "rsa_pss_rsae_sha512",
    0x0807: "ed25519",
    0x0808: "ed448",
    0x0809: "rsa_pss_pss_sha256",
    0x080A: "rsa_pss_pss_sha384",
    0x080B: "rsa_pss_pss_sha512",
    0x081A: "ecdsa_brainpoolP256r1_sha256",
    0x081B: "ecdsa_brainpoolP384r1_sha384",
    0x081C: "ecdsa_brainpoolP512r1_sha512",
    0x0904: "mldsa44",
    0x0905: "mldsa65",
    0x0906: "mldsa87",
}

VERSIONS = {0x0304: "TLS1.3", 0x0303: "TLS1.2", 0x0302: "TLS1.1", 0x0301: "TLS1.0", 0x0300: "SSL3"}
CERT_COMPRESSION = {1: "zlib", 2: "brotli", 3: "zstd"}
PSK_MODES = {0: "psk_ke", 1: "psk_dhe_ke"}


def is_grease(v):
    return (v & 0x0F0F) == 0x0A0A and (v >> 8) == (v & 0xFF)


def h4(v):
    return "%04x" % v


def named(v, table):
    if is_grease(v):
        return "GREASE(%04x)" % v
    return "%04x(%s)" % (v, table.get(v, "?"))


class Short(Exception):
    pass


class Reader:
    """Bounds-checked reads from a byte string; Short when one runs past its end."""

    def __init__(self, data):
        self.data, self.off = data, 0

    def left(self):
        return len(self.data) - self.off

    def take(self, n):
        if n > self.left():
            raise Short("%d bytes wanted at %d, %d left" % (n, self.off, self.left()))
        b = self.data[self.off : self.off + n]
        self.off += n
        return b

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u24(self):
        b = self.take(3)
        return (b[0] << 16) | (b[1] << 8) | b[2]

    def vec(self, lenbytes):
        n = {1: self.u8, 2: self.u16, 3: self.u24}[lenbytes]()
        return Reader(self.take(n))

    def u16s(self):
        out = []
        while self.left():
            out.append(self.u16())
        return out


# ---- capture ---------------------------------------------------------------


def pcap_packets(path):
    """Yields (time, link payload starting at the IP header) of a classic pcap."""
    data = open(path, "rb").read()
    if len(data) < 24:
        raise SystemExit("%s: not a pcap" % path)
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise SystemExit("%s: not a classic pcap (pcapng is not read)" % path)
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from(end + "IIII", data, off)
        pkt = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        t = sec + frac / (1e9 if nano else 1e6)
        if linktype == 1:  # Ethernet, maybe one VLAN tag
            if len(pkt) < 14:
                continue
            etype, pkt = struct.unpack_from(">H", pkt, 12)[0], pkt[14:]
            if etype == 0x8100 and len(pkt) >= 4:
                etype, pkt = struct.unpack_from(">H", pkt, 2)[0], pkt[4:]
        elif linktype == 113:  # Linux cooked
            if len(pkt) < 16:
                continue
            etype, pkt = struct.unpack_from(">H", pkt, 14)[0], pkt[16:]
        elif linktype in (101, 228):  # raw IPv4
            etype = 0x0800
        else:
            raise SystemExit("%s: link type %d not read" % (path, linktype))
        if etype in (0x0800, 0x86DD):
            yield t, pkt


def tcp_segments(path):
    """Yields (time, src, sport, dst, dport, seq, flags, payload) for each TCP segment."""
    for t, ip in pcap_packets(path):
        if len(ip) < 20:
            continue
        if ip[0] >> 4 == 4:
            ihl, proto = (ip[0] & 15) * 4, ip[9]
            total = struct.unpack_from(">H", ip, 2)[0]
            src, dst, l4 = ip[12:16], ip[16:20], ip[ihl:total]
        elif ip[0] >> 4 == 6 and len(ip) >= 40:
            proto, plen = ip[6], struct.unpack_from(">H", ip, 4)[0]
            src, dst, l4 = ip[8:24], ip[24:40], ip[40 : 40 + plen]
        else:
            continue
        if proto != 6 or len(l4) < 20:
            continue
        sport, dport, seq = struct.unpack_from(">HHI", l4, 0)
        doff, flags = (l4[12] >> 4) * 4, l4[13]
        yield t, src, sport, dst, dport, seq, flags, l4[doff:]


def addr(b):
    if len(b) == 4:
        return ".".join(map(str, b))
    return ":".join("%x" % v for v in struct.unpack(">8H", b))


def client_streams(path, port):
    """The first bytes each client sent to PORT, one entry per connection, in
    the order the connections opened: (time, "addr:port", bytes). Segments
    are placed by sequence number, so retransmissions and reordering do no
    harm; a stream stops at its first hole."""
    flows = OrderedDict()
    for t, src, sport, dst, dport, seq, flags, payload in tcp_segments(path):
        if dport != port:
            continue
        key = (src, sport, dst)
        if flags & 0x02:  # SYN: a new connection (a reused port starts afresh)
            flows[key] = {"t": t, "isn": seq, "segs": {}}
            continue
        f = flows.get(key)
        if f is None or not payload:
            continue
        rel = (seq - f["isn"] - 1) & 0xFFFFFFFF
        if rel < 1 << 20 and len(payload) > len(f["segs"].get(rel, b"")):
            f["segs"][rel] = payload
    out = []
    for (src, sport, _), f in flows.items():
        data, pos = bytearray(), 0
        for rel in sorted(f["segs"]):
            seg = f["segs"][rel]
            if rel > pos:
                break
            if rel + len(seg) > pos:
                data += seg[pos - rel :]
                pos = rel + len(seg)
        out.append((f["t"], "%s:%d" % (addr(src), sport), bytes(data)))
    return out


# ---- ClientHello -----------------------------------------------------------


def handshake_message(stream):
    """The first handshake message of a client's stream, from its records:
    (record headers [(type, version, length)], message bytes with its header),
    or raises Short / ValueError."""
    r, records, body = Reader(stream), [], b""
    while True:
        ctype, ver, n = r.u8(), r.u16(), r.u16()
        records.append((ctype, ver, n))
        if ctype != 22:
            raise ValueError("record type %d, not a handshake" % ctype)
        body += r.take(n)
        if len(body) >= 4 and len(body) >= 4 + int.from_bytes(body[1:4], "big"):
            return records, body[: 4 + int.from_bytes(body[1:4], "big")]


def parse_extension(eid, d, out):
    """Puts what extension EID (body D) holds into the dict OUT."""
    r = Reader(d)
    if eid == 0x0000:
        lst = r.vec(2)
        names = []
        while lst.left():
            typ, name = lst.u8(), lst.vec(2)
            names.append(name.take(name.left()).decode("ascii", "replace") if typ == 0 else "type%d" % typ)
        out["sni"] = names
    elif eid == 0x000A:
        out["groups"] = r.vec(2).u16s()
    elif eid == 0x000B:
        out["ec_point_formats"] = list(r.vec(1).data)
    elif eid == 0x000D:
        out["sigalgs"] = r.vec(2).u16s()
    elif eid == 0x0032:
        out["sigalgs_cert"] = r.vec(2).u16s()
    elif eid == 0x0010:
        lst, protos = r.vec(2), []
        while lst.left():
            p = lst.vec(1)
            protos.append(p.take(p.left()))
        out["alpn"] = protos
    elif eid in (0x4469, 0x44CD):
        lst, protos = r.vec(2), []
        while lst.left():
            p = lst.vec(1)
            protos.append(p.take(p.left()))
        out["alps"] = {"codepoint": h4(eid), "protocols": [p.decode("ascii", "replace") for p in protos]}
    elif eid == 0x002B:
        out["supported_versions"] = r.vec(1).u16s()
    elif eid == 0x002D:
        out["psk_modes"] = list(r.vec(1).data)
    elif eid == 0x0033:
        lst, shares = r.vec(2), []
        while lst.left():
            g, k = lst.u16(), lst.vec(2)
            shares.append((g, k.left()))
            out.setdefault("key_share_data", {})[g] = k.data
        out["key_shares"] = shares
    elif eid == 0x001B:
        lst = r.vec(1)
        out["cert_compression"] = lst.u16s()
    elif eid == 0xFE0D:
        typ = r.u8()
        ech = {"type": typ}
        if typ == 0:  # outer
            ech["kdf"], ech["aead"] = r.u16(), r.u16()
            ech["config_id"] = r.u8()
            ech["enc_len"] = r.vec(2).left()
            ech["payload_len"] = r.vec(2).left()
        out["ech"] = ech
    elif eid == 0xCA34:
        # Trust anchor identifiers (draft-ietf-tls-trust-anchor-ids, on an
        # experimental codepoint): relative OIDs, base-128 arcs.
        lst, ids = r.vec(2), []
        while lst.left():
            b, arcs, v = lst.vec(1).data, [], 0
            for x in b:
                v = (v << 7) | (x & 0x7F)
                if not x & 0x80:
                    arcs.append(v)
                    v = 0
            ids.append(".".join(map(str, arcs)))
        out["trust_anchors"] = ids
    elif eid == 0x0015:
        out["padding_len"] = len(d)
        out["padding_zero"] = not any(d)
    elif eid == 0x0005:
        out["status_request_type"] = r.u8() if r.left() else None
    elif eid == 0x0029:
        ids = r.vec(2)
        n = 0
        while ids.left():
            ids.vec(2)
            ids.take(4)
            n += 1
        out["psk_identities"] = n


def parse_hello(stream):
    records, msg = handshake_message(stream)
    r = Reader(msg)
    htype, hlen = r.u8(), r.u24()
    if htype != 1:
        raise ValueError("handshake type %d, not a ClientHello" % htype)
    h = {
        "records": records,
        "record_len": records[0][2],
        "record_version": records[0][1],
        "handshake_len": hlen,
        "legacy_version": r.u16(),
    }
    r.take(32)
    h["session_id_len"] = r.vec(1).left()
    h["ciphers"] = r.vec(2).u16s()
    h["compression"] = list(r.vec(1).data)
    h["extensions"] = []
    exts = r.vec(2) if r.left() else Reader(b"")
    while exts.left():
        eid, body = exts.u16(), exts.vec(2)
        h["extensions"].append((eid, body.left()))
        if not is_grease(eid):
            parse_extension(eid, body.data, h)
        else:
            h.setdefault("grease_ext_bodies", []).append(body.left())
    h["ja4"], h["ja4_r"] = ja4(h)
    h["ja3_str"], h["ja3"] = ja3(h)
    # The whole first flight of records, for hex dumps.
    h["raw"] = stream[: sum(5 + n for _, _, n in records)]
    return h


def mlkem768_ek_valid(ek):
    """Whether EK is a well-formed ML-KEM-768 encapsulation key (FIPS 203
    7.2: 1184 bytes, and each of its 768 12-bit coefficients below q)."""
    if len(ek) != 1184:
        return False
    for i in range(0, 1152, 3):
        b0, b1, b2 = ek[i], ek[i + 1], ek[i + 2]
        if (b0 | (b1 & 15) << 8) >= 3329 or (b1 >> 4 | b2 << 4) >= 3329:
            return False
    return True


def hybrid(h):
    """What the X25519MLKEM768 share of hello H holds (ML-KEM-768's
    encapsulation key, then an X25519 share), or None without one."""
    d = h.get("key_share_data", {}).get(0x11EC)
    if d is None:
        return None
    x = h["key_share_data"].get(0x001D)
    return {
        "mlkem_ek_valid": mlkem768_ek_valid(d[:1184]),
        "x25519_len": len(d) - 1184,
        "x25519_same_as_x25519_share": x is not None and d[1184:] == x,
    }


def ja4(h):
    ciphers = [c for c in h["ciphers"] if not is_grease(c)]
    exts = [e for e, _ in h["extensions"] if not is_grease(e)]
    versions = [v for v in h.get("supported_versions", []) if not is_grease(v)]
    v = max(versions) if versions else h["legacy_version"]
    ver = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3", 0x0002: "s2",
           0xFEFF: "d1", 0xFEFD: "d2", 0xFEFC: "d3"}.get(v, "00")
    sni = "d" if 0x0000 in exts else "i"
    alpn = h.get("alpn") or []
    if not alpn or not alpn[0]:
        a = "00"
    else:
        p = alpn[0]
        if chr(p[0]).isalnum() and chr(p[-1]).isalnum() and p[0] < 128 and p[-1] < 128:
            a = chr(p[0]) + chr(p[-1])
        else:
            x = p.hex()
            a = x[0] + x[-1]
    part_a = "t%s%s%02d%02d%s" % (ver, sni, min(len(ciphers), 99), min(len(exts), 99), a)
    c_str = ",".join(sorted(h4(c) for c in ciphers))
    e_str = ",".join(sorted(h4(e) for e in exts if e not in (0x0000, 0x0010)))
    sig = [s for s in h.get("sigalgs", []) if not is_grease(s)]
    if sig:
        e_str += "_" + ",".join(h4(s) for s in sig)

    def sha12(s):
        return hashlib.sha256(s.encode()).hexdigest()[:12] if s else "000000000000"

    return "%s_%s_%s" % (part_a, sha12(c_str), sha12(e_str) if exts else "000000000000"), (
        "%s_%s_%s" % (part_a, c_str, e_str)
    )


def ja3(h):
    def j(vals):
        return "-".join(str(v) for v in vals if not is_grease(v))

    s = "%d,%s,%s,%s,%s" % (
        h["legacy_version"],
        j(h["ciphers"]),
        j(e for e, _ in h["extensions"]),
        j(h.get("groups", [])),
        "-".join(str(v) for v in h.get("ec_point_formats", [])),
    )
    return s, hashlib.md5(s.encode()).hexdigest()


def hellos_of(path, port, src=None):
    out = []
    for t, client, stream in client_streams(path, port):
        if src and client.rsplit(":", 1)[0] != src:
            continue
        try:
            h = parse_hello(stream)
        except (Short, ValueError) as e:
            out.append({"client": client, "time": t, "error": str(e), "bytes": len(stream)})
            continue
        h["client"], h["time"] = client, t
        out.append(h)
    return out


# ---- report ----------------------------------------------------------------


def grease_places(h):
    """GREASE values by where they sit in hello H."""
    p = OrderedDict()

    def at(name, vals):
        g = [h4(v) for v in vals if is_grease(v)]
        if g:
            p[name] = g

    at("cipher_suites", h["ciphers"])
    exts = [e for e, _ in h["extensions"]]
    for i, e in enumerate(exts):
        if is_grease(e):
            where = "first" if i == 0 else "last" if i == len(exts) - 1 else "position %d" % i
            p.setdefault("extension " + where, []).append(h4(e))
    at("supported_groups", h.get("groups", []))
    at("key_share", [g for g, _ in h.get("key_shares", [])])
    at("supported_versions", h.get("supported_versions", []))
    at("signature_algorithms", h.get("sigalgs", []))
    at("compress_certificate", h.get("cert_compression", []))
    return p


def describe(h):
    """The lines of the report for one hello."""
    L = []
    rec = ", ".join("type %d version %04x length %d" % r for r in h["records"])
    L.append("records             %s" % rec)
    L.append("handshake length    %d" % h["handshake_len"])
    L.append("legacy version      %s" % named(h["legacy_version"], VERSIONS))
    L.append("session id length   %d" % h["session_id_len"])
    L.append("compression         %s" % h["compression"])
    L.append("cipher suites (%d)   %s" % (len(h["ciphers"]), " ".join(named(c, CIPHERS) for c in h["ciphers"])))
    L.append("extensions (%d), wire order:" % len(h["extensions"]))
    for e, n in h["extensions"]:
        L.append("    %-40s length %d" % (named(e, EXTENSIONS), n))
    if "sni" in h:
        L.append("server_name         %s" % h["sni"])
    if "groups" in h:
        L.append("supported_groups    %s" % " ".join(named(g, GROUPS) for g in h["groups"]))
    if "key_shares" in h:
        L.append("key_share           %s" % " ".join("%s:%dB" % (named(g, GROUPS), n) for g, n in h["key_shares"]))
    if "sigalgs" in h:
        L.append("signature_algs (%d)  %s" % (len(h["sigalgs"]), " ".join(named(s, SIGALGS) for s in h["sigalgs"])))
    if "sigalgs_cert" in h:
        L.append("sigalgs_cert        %s" % " ".join(named(s, SIGALGS) for s in h["sigalgs_cert"]))
    hy = hybrid(h)
    if hy:
        L.append("X25519MLKEM768      ML-KEM-768 key well-formed: %s; X25519 part %d B, same as the x25519 share: %s"
                 % (hy["mlkem_ek_valid"], hy["x25519_len"], hy["x25519_same_as_x25519_share"]))
    if "alpn" in h:
        L.append("alpn                %s" % [p.decode("ascii", "replace") for p in h["alpn"]])
    if "supported_versions" in h:
        L.append("supported_versions  %s" % " ".join(named(v, VERSIONS) for v in h["supported_versions"]))
    if "alps" in h:
        L.append("alps                codepoint %s protocols %s" % (h["alps"]["codepoint"], h["alps"]["protocols"]))
    if "cert_compression" in h:
        L.append("compress_cert       %s" % " ".join(named(c, CERT_COMPRESSION) for c in h["cert_compression"]))
    if "ech" in h:
        L.append("ech                 %s" % " ".join("%s=%s" % kv for kv in h["ech"].items()))
    if "trust_anchors" in h:
        L.append("trust_anchors (%d)   %s" % (len(h["trust_anchors"]), " ".join(h["trust_anchors"])))
    if "padding_len" in h:
        L.append("padding             %d bytes%s" % (h["padding_len"], " (zeros)" if h["padding_zero"] else ""))
    if "psk_modes" in h:
        L.append("psk_modes           %s" % [PSK_MODES.get(m, m) for m in h["psk_modes"]])
    if "ec_point_formats" in h:
        L.append("ec_point_formats    %s" % h["ec_point_formats"])
    if "status_request_type" in h:
        L.append("status_request      type %s" % h["status_request_type"])
    if "psk_identities" in h:
        L.append("pre_shared_key      %d identities" % h["psk_identities"])
    if "grease_ext_bodies" in h:
        L.append("GREASE ext bodies   lengths %s" % h["grease_ext_bodies"])
    L.append("GREASE              %s" % "; ".join("%s %s" % (k, ",".join(v)) for k, v in grease_places(h).items()))
    L.append("JA4                 %s" % h["ja4"])
    L.append("JA4_r               %s" % h["ja4_r"])
    L.append("JA3                 %s" % h["ja3"])
    L.append("JA3 string          %s" % h["ja3_str"])
    return L


def norm(vals):
    """A list with GREASE values written as GREASE."""
    return ["GREASE" if is_grease(v) else h4(v) for v in vals]


def summary(hellos):
    """What a set of hellos has in common and what varies: an ordered dict of
    row name -> printable value (the rows of compare)."""
    ok = [h for h in hellos if "error" not in h]
    s = OrderedDict()
    s["connections"] = "%d (%d unparsed)" % (len(hellos), len(hellos) - len(ok))
    if not ok:
        return s

    def one_or_all(f):
        vals = sorted(set(f(h) for h in ok))
        return " | ".join(vals)

    def counts(f):
        return " ".join("%s x%d" % vc for vc in sorted(Counter(f(h) for h in ok).items()))

    s["ja4"] = one_or_all(lambda h: h["ja4"])
    s["ja4_r"] = one_or_all(lambda h: h["ja4_r"])
    s["ja3 distinct"] = str(len({h["ja3"] for h in ok}))
    s["legacy_version"] = one_or_all(lambda h: h4(h["legacy_version"]))
    s["record_version"] = one_or_all(lambda h: h4(h["record_version"]))
    s["session_id_len"] = one_or_all(lambda h: str(h["session_id_len"]))
    s["cipher_suites"] = one_or_all(lambda h: ",".join(norm(h["ciphers"])))
    s["extension set"] = one_or_all(
        lambda h: ",".join(sorted(norm(e for e, _ in h["extensions"])))
    )
    s["extension count"] = one_or_all(lambda h: str(len(h["extensions"])))
    s["supported_groups"] = one_or_all(lambda h: ",".join(norm(h.get("groups", []))))
    s["key_share"] = one_or_all(
        lambda h: ",".join("%s:%d" % (n, ln) for n, (_, ln) in zip(norm(g for g, _ in h.get("key_shares", [])), h.get("key_shares", [])))
    )
    s["signature_algorithms"] = one_or_all(lambda h: ",".join(norm(h.get("sigalgs", []))))
    s["X25519MLKEM768 share"] = one_or_all(
        lambda h: "ek valid %s, x25519 reused %s" % (hybrid(h)["mlkem_ek_valid"], hybrid(h)["x25519_same_as_x25519_share"])
        if hybrid(h) else "-")
    s["alpn"] = one_or_all(lambda h: ",".join(p.decode("ascii", "replace") for p in h.get("alpn", [])))
    s["supported_versions"] = one_or_all(lambda h: ",".join(norm(h.get("supported_versions", []))))
    s["alps"] = one_or_all(
        lambda h: "%s %s" % (h["alps"]["codepoint"], ",".join(h["alps"]["protocols"])) if "alps" in h else "-"
    )
    s["compress_certificate"] = one_or_all(lambda h: ",".join(norm(h.get("cert_compression", []))))
    s["psk_modes"] = one_or_all(lambda h: ",".join(str(m) for m in h.get("psk_modes", [])))
    s["ec_point_formats"] = one_or_all(lambda h: ",".join(str(m) for m in h.get("ec_point_formats", [])))
    s["ech (kdf aead enc)"] = one_or_all(
        lambda h: "%04x %04x %d" % (h["ech"]["kdf"], h["ech"]["aead"], h["ech"]["enc_len"])
        if "ech" in h and h["ech"]["type"] == 0 else "-"
    )
    s["ech payload lengths"] = one_or_all(
        lambda h: str(h["ech"]["payload_len"]) if "ech" in h and h["ech"]["type"] == 0 else "-"
    )
    s["ech payload length counts"] = counts(
        lambda h: str(h["ech"]["payload_len"]) if "ech" in h and h["ech"]["type"] == 0 else "-")
    s["ech config_id distinct"] = str(len({h["ech"].get("config_id") for h in ok if "ech" in h}))
    s["trust_anchors set"] = one_or_all(lambda h: ",".join(sorted(h.get("trust_anchors", []))))
    s["trust_anchors orders distinct"] = str(len({tuple(h.get("trust_anchors", [])) for h in ok}))
    s["padding"] = one_or_all(lambda h: str(h["padding_len"]) if "padding_len" in h else "-")
    s["grease ext bodies"] = one_or_all(lambda h: ",".join(map(str, h.get("grease_ext_bodies", []))))
    s["record lengths"] = one_or_all(lambda h: str(h["record_len"]))
    s["record length counts"] = counts(lambda h: str(h["record_len"]))
    orders = [tuple(norm(e for e, _ in h["extensions"])) for h in ok]
    s["extension orders distinct"] = "%d of %d" % (len(set(orders)), len(orders))
    s["order differs from previous"] = "%d of %d" % (
        sum(1 for a, b in zip(orders, orders[1:]) if a != b), max(len(orders) - 1, 0))
    width = max(len(o) for o in orders)
    fixed, moving = [], []
    for i in range(width):
        at = {o[i] if i < len(o) else "-" for o in orders}
        (fixed if len(at) == 1 else moving).append("%d:%s" % (i, next(iter(at)) if len(at) == 1 else len(at)))
    s["positions fixed"] = " ".join(fixed) or "-"
    s["positions varying (distinct ids)"] = " ".join(moving) or "-"
    places = OrderedDict()
    for h in ok:
        for k, v in grease_places(h).items():
            places.setdefault(k, Counter()).update(v)
    def share(n):
        return "all" if n == len(ok) else "in %d of %d" % (n, len(ok))

    for k, c in places.items():
        s["grease at " + k] = share(sum(c.values()))
        s["grease values at " + k] = "%d distinct" % len(c)
    s["grease key_share == supported_groups"] = share(sum(
        1 for h in ok if h.get("key_shares") and h.get("groups") and h["key_shares"][0][0] == h["groups"][0]))
    pairs = Counter()
    for h in ok:
        g = [(k, v[0]) for k, v in grease_places(h).items()]
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                if g[i][1] == g[j][1]:
                    pairs[g[i][0] + " == " + g[j][0]] += 1
    s["grease values shared"] = ", ".join("%s in %d" % kv for kv in pairs.most_common()) or "-"
    s["grease ext first == last"] = str(
        sum(1 for h in ok if h["extensions"] and h["extensions"][0][0] == h["extensions"][-1][0]))
    return s


# Rows of the summary that are statistics of random choices (counts, how
# many distinct values): compare shows them but does not hold two captures
# to them.
STATS = ("connections", "order differs from previous", "ja3 distinct", "ech payload length counts", "ech config_id distinct",
         "record length counts", "positions varying (distinct ids)", "grease values at ",
         "grease values shared")


def is_stat(row):
    return any(row == r or (r.endswith(" ") and row.startswith(r)) for r in STATS)


def report(path, port, as_json):
    hellos = hellos_of(path, port, SRC)
    if as_json:
        def clean(h):
            d = {k: v for k, v in h.items() if k not in ("raw", "key_share_data")}
            if hybrid(h):
                d["hybrid"] = hybrid(h)
            if "alpn" in d:
                d["alpn"] = [p.decode("ascii", "replace") for p in d["alpn"]]
            return d
        print(json.dumps({"hellos": [clean(h) for h in hellos], "summary": summary(hellos)}, indent=1))
        return
    for i, h in enumerate(hellos):
        print("== hello %d from %s" % (i, h["client"]))
        if "error" in h:
            print("   unparsed (%d bytes): %s" % (h["bytes"], h["error"]))
            continue
        for line in describe(h):
            print("   " + line)
    print("== summary over %d connections" % len(hellos))
    for k, v in summary(hellos).items():
        print("   %-34s %s" % (k, v))


def hexdump(path, port, index):
    hellos = [h for h in hellos_of(path, port, SRC) if "error" not in h]
    if index >= len(hellos):
        raise SystemExit("%s: %d hellos, no hello %d" % (path, len(hellos), index))
    raw = hellos[index]["raw"]
    for off in range(0, len(raw), 16):
        chunk = raw[off : off + 16]
        print("%04x  %-48s %s" % (off, " ".join("%02x" % b for b in chunk),
                                 "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)))


def compare(a, b, port, names, require, only, min_hellos, orders):
    ha, hb = hellos_of(a, port, SRC), hellos_of(b, port, SRC_B or SRC)
    sa, sb = summary(ha), summary(hb)
    rows = list(OrderedDict.fromkeys(list(sa) + list(sb)))
    differ = [r for r in rows if sa.get(r, "-") != sb.get(r, "-") and not is_stat(r)]
    shown = [r for r in only if r in rows] if only else rows
    w = max(len(r) for r in shown)
    print("%-*s  %-4s  %s / %s" % (w, "field", "same", names[0], names[1]))
    for r in shown:
        va, vb = sa.get(r, "-"), sb.get(r, "-")
        same = va == vb
        print("%-*s  %-4s  %s" % (w, r, "~" if is_stat(r) else "yes" if same else "NO", va))
        if not same:
            print("%-*s        %s" % (w, "", vb))
    rc = 0
    for name, hs in zip(names, (ha, hb)):
        ok = [h for h in hs if "error" not in h]
        if len(ok) < min_hellos or len(ok) < len(hs):
            print("%s: %d hellos parsed of %d, at least %d wanted, all parsed" % (name, len(ok), len(hs), min_hellos))
            rc = 1
        if orders:
            d, n = orders
            o = [tuple(norm(e for e, _ in h["extensions"])) for h in ok]
            changed = sum(1 for x, y in zip(o, o[1:]) if x != y)
            pairs = max(len(o) - 1, 0)
            if pairs < n - 1 or changed * n < d * pairs:
                print("%s: the extension order changed in %d of %d consecutive pairs, under %d of %d"
                      % (name, changed, pairs, d, n))
                rc = 1
    bad = [r for r in require if r in differ or r not in rows]
    if bad:
        print("required rows differ: %s" % ", ".join(bad))
        rc = 1
    return rc


SRC = SRC_B = None


def main(argv):
    global SRC, SRC_B
    args, port, as_json, names, require, only, min_hellos, orders = [], 443, False, ["A", "B"], [], [], 0, None
    it = iter(argv[1:])
    for a in it:
        if a == "--port":
            port = int(next(it))
        elif a == "--from":
            SRC = next(it)
        elif a == "--from-b":
            SRC_B = next(it)
        elif a == "--json":
            as_json = True
        elif a == "--names":
            names = next(it).split(",")
        elif a == "--require":
            require = [r for r in next(it).split(",") if r]
        elif a == "--rows":
            only = [r for r in next(it).split(",") if r]
        elif a == "--min-hellos":
            min_hellos = int(next(it))
        elif a == "--orders":
            orders = tuple(int(x) for x in next(it).split("/"))
        else:
            args.append(a)
    if not args:
        raise SystemExit(__doc__)
    cmd = args[0]
    if cmd == "report" and len(args) == 2:
        report(args[1], port, as_json)
    elif cmd == "hex" and len(args) in (2, 3):
        hexdump(args[1], port, int(args[2]) if len(args) == 3 else 0)
    elif cmd == "compare" and len(args) == 3:
        return compare(args[1], args[2], port, names, require, only, min_hellos, orders)
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
