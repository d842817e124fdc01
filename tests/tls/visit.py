#!/usr/bin/env python3
"""A visitor of a TLS server, for tests/netns/tls_decoy.sh.

visit.py HOST PORT [--send FILE]... [--wait SECONDS] [--alpn P1,P2] [--raw]

Opens a TLS connection (certificates are not checked: the test compares
fingerprints itself), sends each FILE's bytes if given (0.2 s apart, so that
each arrives on its own), and then reads until the
server closes or SECONDS pass without a byte (default 2). Prints one line:

  alpn=<protocol or none> bytes=<n read> closed=<yes|no> sha256=<of what was read>
  first=<hex of the first 16 bytes read>

and writes what it read to the file named by $VISIT_OUT when that is set.
With --raw no TLS is spoken: FILE's bytes go over plain TCP (a replay of
captured bytes) and "tls" in the output is "raw".
"""
import hashlib
import os
import socket
import ssl
import sys
import time


def main():
    args = sys.argv[1:]
    host, port = args[0], int(args[1])
    send, wait, alpn, raw = [], 2.0, None, False
    i = 2
    while i < len(args):
        if args[i] == "--send":
            send.append(open(args[i + 1], "rb").read())
            i += 2
        elif args[i] == "--wait":
            wait = float(args[i + 1])
            i += 2
        elif args[i] == "--alpn":
            alpn = args[i + 1].split(",")
            i += 2
        elif args[i] == "--raw":
            raw = True
            i += 1
        else:
            sys.exit("visit.py: unknown argument " + args[i])
    sock = socket.create_connection((host, port), timeout=5)
    chosen = "raw"
    if not raw:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if alpn:
            ctx.set_alpn_protocols(alpn)
        sock = ctx.wrap_socket(sock, server_hostname="www.example.com")
        chosen = sock.selected_alpn_protocol() or "none"
    for k, chunk in enumerate(send):
        if k > 0:
            time.sleep(0.2)
        sock.sendall(chunk)
    sock.settimeout(wait)
    got, closed = b"", False
    while True:
        try:
            b = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionError, ssl.SSLError, OSError):
            closed = True
            break
        if not b:
            closed = True
            break
        got += b
    out = os.environ.get("VISIT_OUT")
    if out:
        with open(out, "wb") as f:
            f.write(got)
    print("alpn=%s bytes=%d closed=%s sha256=%s first=%s" % (
        chosen, len(got), "yes" if closed else "no", hashlib.sha256(got).hexdigest(),
        got[:16].hex()))


if __name__ == "__main__":
    main()
