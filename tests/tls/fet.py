#!/usr/bin/env python3
"""The "fully encrypted traffic" exemptions of Wu et al. (USENIX Security
2023, "How the Great Firewall of China Detects and Blocks Fully Encrypted
Traffic"), applied to the first TCP payload of each side of every
connection in a capture (tests/netns/tls_fet.sh).

Usage: fet.py check PCAP [--port P] [--min N] [--tls] [--verbose]
       fet.py selftest

A first payload (the data of the segment that starts the side's byte
stream) is exempt, i.e. not blocked as fully encrypted, by the first of
these rules that holds, checked in this order:

  ex1 popcount   the average number of set bits per byte is <= 3.4 or >= 4.6
  ex2 prefix6    its first 6 bytes are printable ASCII (0x20-0x7e)
  ex3 half       more than 50 % of its bytes are printable
  ex4 run20      it holds a run of more than 20 printable bytes
  ex5 tls/http   it starts like TLS (0x16 0x03 0x00-0x03) or HTTP
                 (a request method and a space, or "HTTP/")

check prints one line per connection (its sides, the rule that exempts
each, or "NOT EXEMPT") with --verbose, and always a summary of how many
first payloads each rule exempted; it exits 1 when a first payload is not
exempt, when a connection has no payload on a side, or when fewer than N
connections (--min) are in the capture. With --tls it also counts the
first payloads that start like TLS whichever rule came first, and exits 1
unless all do. selftest holds the rules to known
inputs and to random bytes (most random payloads must be found not
exempt, or the check could not fail), and exits 1 if they disagree.
"""
import os
import random
import sys
from collections import Counter, OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hello import addr, tcp_segments  # noqa: E402

HTTP = (b"GET ", b"PUT ", b"POST ", b"HEAD ", b"DELETE ", b"OPTIONS ", b"CONNECT ",
        b"PATCH ", b"TRACE ", b"HTTP/")


def printable(b):
    return 0x20 <= b <= 0x7E


def starts_tls(p):
    return len(p) >= 3 and p[0] == 0x16 and p[1] == 0x03 and p[2] <= 0x03


def exemption(p):
    """The rule that exempts payload P, or None."""
    if not p:
        return None
    bits = sum(bin(b).count("1") for b in p) / len(p)
    if bits <= 3.4 or bits >= 4.6:
        return "ex1 popcount"
    if len(p) >= 6 and all(printable(b) for b in p[:6]):
        return "ex2 prefix6"
    if sum(1 for b in p if printable(b)) * 2 > len(p):
        return "ex3 half"
    run = best = 0
    for b in p:
        run = run + 1 if printable(b) else 0
        best = max(best, run)
    if best > 20:
        return "ex4 run20"
    if starts_tls(p):
        return "ex5 tls"
    if any(p.startswith(m) for m in HTTP):
        return "ex5 http"
    return None


def first_payloads(path, port):
    """Per connection to PORT, in the order they opened: (client "addr:port",
    the client's first payload, the server's), each None if not captured."""
    conns = OrderedDict()
    for _, src, sport, dst, dport, seq, flags, payload in tcp_segments(path):
        if dport == port:
            key, side = (src, sport, dst), 0
        elif sport == port:
            key, side = (dst, dport, src), 1
        else:
            continue
        if flags & 0x02:  # SYN or SYN-ACK: that side's initial sequence number
            if side == 0:
                conns[key] = {"isn": [seq, None], "first": [None, None]}
            elif key in conns:
                conns[key]["isn"][1] = seq
            continue
        c = conns.get(key)
        if c is None or not payload or c["isn"][side] is None:
            continue
        if (seq - c["isn"][side] - 1) & 0xFFFFFFFF == 0 and c["first"][side] is None:
            c["first"][side] = payload
    return [("%s:%d" % (addr(k[0]), k[1]), c["first"][0], c["first"][1]) for k, c in conns.items()]


def check(path, port, least, want_tls, verbose):
    conns = first_payloads(path, port)
    rules, bad, tls = Counter(), [], Counter()
    for client, *sides in conns:
        verdicts = []
        for name, p in zip(("client", "server"), sides):
            r = exemption(p) if p else None
            tls[name] += bool(p and starts_tls(p))
            rules["%s %s" % (name, r or ("no payload" if not p else "NOT EXEMPT"))] += 1
            verdicts.append("%s %d B: %s" % (name, len(p) if p else 0, r or ("no payload" if not p else "NOT EXEMPT")))
            if r is None:
                bad.append("%s %s: %s" % (client, name, (p or b"")[:16].hex() or "no payload"))
        if verbose:
            print("%s  %s" % (client, "; ".join(verdicts)))
    print("connections %d" % len(conns))
    for k, v in sorted(rules.items()):
        print("%-28s %d" % (k, v))
    rc = 0
    if want_tls:
        for name in ("client", "server"):
            print("%s starts like TLS       %d of %d" % (name, tls[name], len(conns)))
            rc |= tls[name] != len(conns)
    if len(conns) < least:
        print("fewer connections than %d" % least)
        rc = 1
    for b in bad:
        print("not exempt: %s" % b)
    return 1 if bad else int(rc)


def selftest():
    rng = random.Random(2023)
    known = [
        (b"\x16\x03\x01\x07\x78" + bytes(rng.randrange(256) for _ in range(1443)), "ex5 tls"),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "ex1 popcount"),  # ASCII text has few set bits
        (b"abcdef" + bytes([0x8f, 0xf0, 0x33, 0xcc]) * 50, "ex2 prefix6"),
        (bytes([0x8f, 0xf0, 0x33, 0xcc]) * 50 + b"GET ", None),
        (b"POST " + bytes([0x8f, 0xf0, 0x33, 0xcc]) * 50, "ex5 http"),
        (bytes(100), "ex1 popcount"),
        (b"\xff" * 100, "ex1 popcount"),
        (bytes([0x80, 0x81]) * 3 + b"A" * 21 + bytes([0x8f, 0xf0]) * 40, "ex4 run20"),
        (bytes([0x0f, 0xf0]) * 10 + b"abcdefghij" * 3, "ex3 half"),
    ]
    rc = 0
    for p, want in known:
        got = exemption(p)
        if got != want:
            print("selftest: %s... gave %s, not %s" % (p[:8].hex(), got, want))
            rc = 1
    # Random payloads of the sizes a first segment takes: nearly all must
    # be found not exempt (the popcount average of a few hundred random
    # bytes is 4 +- 0.1, and runs of printable bytes are short).
    n, flagged = 1000, 0
    for _ in range(n):
        p = bytes(rng.randrange(256) for _ in range(rng.randrange(200, 1449)))
        flagged += exemption(p) is None
    print("selftest: %d of %d random payloads not exempt" % (flagged, n))
    if flagged < 0.9 * n:
        print("selftest: random bytes are exempt too often: the check cannot fail")
        rc = 1
    # And a TLS record with its first byte changed is random bytes again.
    p = bytearray(known[0][0])
    p[0] = 0x9C
    if exemption(bytes(p)) is not None:
        print("selftest: a TLS record with a wrong first byte is still exempt (%s)" % exemption(bytes(p)))
        rc = 1
    return rc


def main(argv):
    args, port, least, want_tls, verbose = [], 443, 0, False, False
    it = iter(argv[1:])
    for a in it:
        if a == "--port":
            port = int(next(it))
        elif a == "--min":
            least = int(next(it))
        elif a == "--tls":
            want_tls = True
        elif a == "--verbose":
            verbose = True
        else:
            args.append(a)
    if args == ["selftest"]:
        return selftest()
    if len(args) == 2 and args[0] == "check":
        return check(args[1], port, least, want_tls, verbose)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
