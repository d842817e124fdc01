#!/usr/bin/env python3
"""QUIC client Initials in a capture, field by field.

tshark (4.0) decrypts the Initials (their keys come from the DCID); this
script takes its JSON (raw bytes of every CRYPTO frame), puts each
connection's CRYPTO stream back together itself and decodes the
ClientHello and its quic_transport_parameters with its own parser, so what
it reports does not depend on tshark's reassembly.

  quic_initial.py report PCAP            one block per connection
  quic_initial.py json PCAP              the same as JSON
  quic_initial.py compare REF PCAP [--names a,b] [--require row,row...]
                                         the shape rows of both, and a
                                         nonzero exit if a required row
                                         (all without --require) differs
                                         or a client datagram is below
                                         1200 bytes

A connection is the client's Initials to UDP 443 sharing the first
Initial's DCID (a server's Retry or new SCID makes chromium switch DCID:
those Initials are counted with the first connection by their source
port).
"""
import json
import subprocess
import sys

TP_NAMES = {
    0x00: "original_destination_connection_id", 0x01: "max_idle_timeout",
    0x02: "stateless_reset_token", 0x03: "max_udp_payload_size", 0x04: "initial_max_data",
    0x05: "initial_max_stream_data_bidi_local", 0x06: "initial_max_stream_data_bidi_remote",
    0x07: "initial_max_stream_data_uni", 0x08: "initial_max_streams_bidi",
    0x09: "initial_max_streams_uni", 0x0a: "ack_delay_exponent", 0x0b: "max_ack_delay",
    0x0c: "disable_active_migration", 0x0e: "active_connection_id_limit",
    0x0f: "initial_source_connection_id", 0x10: "retry_source_connection_id",
    0x11: "version_information", 0x20: "max_datagram_frame_size",
    0x2ab2: "grease_quic_bit", 0x3127: "google_initial_rtt", 0x3128: "google_connection_options",
    0x4752: "google_quic_version",
}
# The TPs whose value is a varint (the rest are shown as hex).
TP_VARINT = {0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0e, 0x20, 0x3127}


def grease16(v):
    return (v & 0x0F0F) == 0x0A0A and (v >> 12) == ((v >> 4) & 0xF)


def tp_grease(i):
    return i >= 27 and (i - 27) % 31 == 0


def varint(b, i):
    n = 1 << (b[i] >> 6)
    v = b[i] & 0x3F
    for k in range(1, n):
        v = v << 8 | b[i + k]
    return v, i + n


def u16(b, i):
    return b[i] << 8 | b[i + 1]


def parse_tps(b):
    out, i = [], 0
    while i < len(b):
        tid, i = varint(b, i)
        ln, i = varint(b, i)
        val = b[i:i + ln]
        i += ln
        if i > len(b):
            raise ValueError("transport parameter runs past the extension")
        name = TP_NAMES.get(tid, "GREASE" if tp_grease(tid) else "0x%x" % tid)
        if tid in TP_VARINT and ln:
            shown = str(varint(val, 0)[0])
        else:
            shown = val.hex()
        out.append({"id": tid, "name": name, "len": ln, "value": shown})
    return out


def parse_ch(m):
    """A ClientHello handshake message (header included)."""
    if m[0] != 1:
        raise ValueError("not a ClientHello")
    body = m[4:4 + (m[1] << 16 | m[2] << 8 | m[3])]
    i = 2 + 32
    sid = body[i]
    i += 1 + sid
    nc = u16(body, i)
    ciphers = [u16(body, i + 2 + k) for k in range(0, nc, 2)]
    i += 2 + nc
    i += 1 + body[i]
    end = i + 2 + u16(body, i)
    i += 2
    r = {"ch_len": len(m), "session_id_len": sid, "ciphers": ["%04x" % c for c in ciphers],
         "exts": [], "ext_lens": []}
    while i < end:
        t, ln = u16(body, i), u16(body, i + 2)
        e = body[i + 4:i + 4 + ln]
        i += 4 + ln
        r["exts"].append("%04x" % t)
        r["ext_lens"].append(ln)
        if t == 0x0000:
            r["sni"] = e[5:5 + u16(e, 3)].decode()
        elif t == 0x000a:
            r["groups"] = ["%04x" % u16(e, 2 + k) for k in range(0, u16(e, 0), 2)]
        elif t == 0x000d:
            r["sigalgs"] = ["%04x" % u16(e, 2 + k) for k in range(0, u16(e, 0), 2)]
        elif t == 0x002b:
            r["versions"] = ["%04x" % u16(e, 1 + k) for k in range(0, e[0], 2)]
        elif t == 0x0010:
            p, k = [], 2
            while k < len(e):
                p.append(e[k + 1:k + 1 + e[k]].decode())
                k += 1 + e[k]
            r["alpn"] = p
        elif t == 0x44cd or t == 0x4469:
            r["alps"] = e.hex()
        elif t == 0x0033:
            s, k = [], 2
            while k < len(e):
                s.append("%04x/%d" % (u16(e, k), u16(e, k + 2)))
                k += 4 + u16(e, k + 2)
            r["key_share"] = s
        elif t == 0x001b:
            r["compress_certificate"] = ["%04x" % u16(e, 1 + k) for k in range(0, e[0], 2)]
        elif t == 0x002d:
            r["psk_modes"] = e.hex()
        elif t == 0xfe0d:
            # outer, kdf, aead, config id, enc, payload
            enc = u16(e, 6)
            r["ech"] = "kdf %04x aead %04x enc %d payload %d" % (
                u16(e, 1), u16(e, 3), enc, u16(e, 8 + enc))
        elif t == 0xca34:
            r["trust_anchors"] = e.hex()
        elif t == 0x0039:
            r["tps"] = parse_tps(e)
    return r


def frames_of(q):
    fr = q.get("quic.frame", [])
    return fr if isinstance(fr, list) else [fr]


def load(pcap):
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", "quic.long.packet_type==0 && udp.dstport==443",
         "-T", "json", "-x", "--no-duplicate-keys"],
        check=True, capture_output=True, text=True).stdout
    conns = {}
    for pkt in json.loads(out or "[]"):
        lay = pkt["_source"]["layers"]
        qs = lay["quic"]
        qs = qs if isinstance(qs, list) else [qs]
        sport = lay["udp"]["udp.srcport"]
        udp_len = int(lay["udp"]["udp.length"]) - 8
        for q in qs:
            if q.get("quic.long.packet_type") != "0":
                continue
            key = (lay["ip"]["ip.src"], sport)
            c = conns.setdefault(key, {"packets": [], "crypto": {}, "first_dcid": None})
            dcid = q.get("quic.dcid", "")
            if c["first_dcid"] is None:
                c["first_dcid"] = dcid
            kinds = []
            for f in frames_of(q):
                t = int(f.get("quic.frame_type", "-1"))
                if t == 6:
                    off = int(f["quic.crypto.offset"])
                    data = bytes.fromhex(f["quic.crypto.crypto_data_raw"][0])
                    c["crypto"][off] = data
                    kinds.append("CRYPTO")
                elif t == 1:
                    kinds.append("PING")
                elif t == 0:
                    kinds.append("PADDING")
                elif t in (2, 3):
                    kinds.append("ACK")
                else:
                    kinds.append("0x%x" % t)
            c["packets"].append({
                "udp_payload": udp_len, "dcid_len": int(q.get("quic.dcil", 0)),
                "scid_len": int(q.get("quic.scil", 0)), "first_dcid": dcid == c["first_dcid"],
                "pn_len": int(q.get("quic.packet_number_length", 0)) + 1,
                "pn": int(q.get("quic.packet_number", -1)), "token_len": int(q.get("quic.token_length", 0)),
                "frames": kinds})
    res = []
    for key, c in conns.items():
        stream, off = b"", 0
        for o in sorted(c["crypto"]):
            d = c["crypto"][o]
            if o <= off:
                stream = stream[:o] + d if o + len(d) > off else stream
                off = max(off, o + len(d))
        r = {"client": "%s:%s" % key, "packets": c["packets"]}
        first = [p for p in c["packets"] if p["first_dcid"]]
        r["hello_packets"] = len(first)
        r["crypto_frames"] = sum(p["frames"].count("CRYPTO") for p in first)
        try:
            r["hello"] = parse_ch(stream)
        except (ValueError, IndexError) as e:
            r["hello_error"] = str(e)
        res.append(r)
    return res


def shape(r):
    """The rows a QUIC Initial is compared on (sets, not orders: chromium
    permutes extensions and transport parameters)."""
    h = r.get("hello", {})
    first = [p for p in r["packets"] if p["first_dcid"]]
    tps = h.get("tps", [])
    return {
        "dcid_len": sorted({p["dcid_len"] for p in first}),
        "scid_len": sorted({p["scid_len"] for p in first}),
        "pn_len": sorted({p["pn_len"] for p in first}),
        "first_pn": first[0]["pn"] if first else None,
        "token_len": sorted({p["token_len"] for p in first}),
        "udp_payload_min": min((p["udp_payload"] for p in first), default=0),
        "udp_payload": sorted({p["udp_payload"] for p in first}),
        "hello_packets": r["hello_packets"],
        "frame_kinds": sorted({k for p in first for k in p["frames"]}),
        "session_id_len": h.get("session_id_len"),
        "ciphers": h.get("ciphers"),
        "ext_set": sorted(h.get("exts", [])),
        "ext_count": len(h.get("exts", [])),
        "sni": h.get("sni"),
        "alpn": h.get("alpn"),
        "alps": h.get("alps"),
        "groups": h.get("groups"),
        "key_share": h.get("key_share"),
        "sigalgs": h.get("sigalgs"),
        "versions": h.get("versions"),
        "compress_certificate": h.get("compress_certificate"),
        "psk_modes": h.get("psk_modes"),
        "ech_shape": (h.get("ech") or "").rsplit(" payload", 1)[0] or None,
        "trust_anchors": h.get("trust_anchors"),
        "tp_ids": sorted("%x" % t["id"] for t in tps if t["name"] != "GREASE"),
        "tp_grease": sum(1 for t in tps if t["name"] == "GREASE"),
        "tp_values": sorted("%s=%s" % (t["name"], t["value"]) for t in tps
                            if t["name"] not in ("GREASE", "version_information")),
        "version_information_len": [t["len"] for t in tps if t["name"] == "version_information"],
    }


def report(rs):
    for r in rs:
        print("connection from %s: %d Initials" % (r["client"], len(r["packets"])))
        for p in r["packets"]:
            print("  udp %d dcid %d scid %d pn %d (%d B) token %d%s: %s" % (
                p["udp_payload"], p["dcid_len"], p["scid_len"], p["pn"], p["pn_len"],
                p["token_len"], "" if p["first_dcid"] else " (new dcid)", " ".join(p["frames"])))
        h = r.get("hello")
        if not h:
            print("  no ClientHello: %s" % r.get("hello_error"))
            continue
        print("  hello %d B over %d Initials, %d CRYPTO frames" % (
            h["ch_len"], r["hello_packets"], r["crypto_frames"]))
        for k in ("session_id_len", "ciphers", "exts", "sni", "alpn", "alps", "groups", "key_share",
                  "sigalgs", "versions", "compress_certificate", "psk_modes", "ech"):
            print("  %s: %s" % (k, h.get(k)))
        print("  tps (wire order):")
        for t in h.get("tps", []):
            print("    %-6x %-38s len %-3d %s" % (t["id"], t["name"], t["len"], t["value"]))


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "report":
        report(load(a[1]))
    elif len(a) == 2 and a[0] == "json":
        print(json.dumps(load(a[1]), indent=1))
    elif len(a) >= 3 and a[0] == "compare":
        names, require = ["ref", "test"], None
        opts = a[3:]
        while opts:
            if opts[0] == "--names":
                names = opts[1].split(",")
            elif opts[0] == "--require":
                require = opts[1].split(",")
            opts = opts[2:]
        sides = [[shape(r) for r in load(p)] for p in a[1:3]]
        if not all(sides):
            print("no Initials in %s" % " / ".join(n for n, s in zip(names, sides) if not s))
            sys.exit(1)
        bad = 0
        for k in sides[0][0]:
            vals = [sorted({json.dumps(s[k]) for s in side}) for side in sides]
            # Sizes and counts that vary per connection are shown, not required.
            same = vals[0] == vals[1]
            need = require is None or k in require
            bad += need and not same
            print("%-24s %-4s %s: %s | %s: %s" % (
                k, ("ok" if same else "DIFF") if need else ("same" if same else "(differs)"),
                names[0], " / ".join(vals[0]), names[1], " / ".join(vals[1])))
        small = [s["udp_payload_min"] for s in sides[1] if s["udp_payload_min"] < 1200]
        if small:
            print("datagram below 1200 bytes: %s" % small)
            bad += 1
        sys.exit(1 if bad else 0)
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
