#!/usr/bin/env python3
"""The "real site" behind a REALITY front, for tests/netns/reality_*.sh.

    realsite.py CERT KEY DIR ADDR PORT LOG [DELAY_MS]

An HTTPS site as a web server configures one by default: OpenSSL (Python's
ssl module) with TLS 1.2 and 1.3, its two session tickets after a full
handshake, ALPN http/1.1, CERT (a PEM chain, leaf first) and KEY. It serves
the files in DIR, a thread per connection, the handshake included; an idle
connection is closed after 10 s. With DELAY_MS it answers a connection
that much later (a site that far away, as the front sees it). Every
connection leaves one line in LOG, flushed at once:

    <peer> handshake ok <TLS version>
    <peer> handshake failed <OpenSSL's reason>
"""
import http.server
import ssl
import sys
import threading
import time

LOCK = threading.Lock()


class Handler(http.server.SimpleHTTPRequestHandler):
    timeout = 10

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def note(self, line):
        with LOCK:
            self.log.write(line + "\n")
            self.log.flush()

    def finish_request(self, request, client_address):
        peer = "%s:%d" % client_address[:2]
        if self.delay > 0:
            time.sleep(self.delay)
        request.settimeout(Handler.timeout)
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.note("%s handshake failed %s" % (peer, getattr(e, "reason", None) or e))
            return
        self.note("%s handshake ok %s" % (peer, conn.version()))
        self.RequestHandlerClass(conn, client_address, self)


def main():
    cert, key, root, addr, port, log = sys.argv[1:7]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    handler = lambda *a, **k: Handler(*a, directory=root, **k)  # noqa: E731
    srv = Server((addr, int(port)), handler)
    srv.ctx = ctx
    srv.log = open(log, "a", buffering=1)
    srv.delay = float(sys.argv[7]) / 1000 if len(sys.argv) > 7 else 0.0
    srv.serve_forever()


if __name__ == "__main__":
    main()
