#!/usr/bin/env python3
"""A local HTTPS site for the TLS capture tests (tests/lib/tls_hello.sh).

    site.py CERT KEY DIR PORT

Serves the files in DIR over TLS (no session tickets, so every connection
is a full handshake) with a thread per connection, handshake included, so
that a client that sends no HTTP request (yipd's TLS link, whose first
bytes are a frame) holds up no other, as it would with openssl s_server,
which serves one connection at a time. Such a client is dropped after
30 s: longer than a test's capture, so yipd dials each peer once in it.
"""
import http.server
import ssl
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    timeout = 30  # a connection that sends no request line

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def finish_request(self, request, client_address):
        # In the connection's own thread: the handshake too.
        request.settimeout(Handler.timeout)
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        self.RequestHandlerClass(conn, client_address, self)


def main():
    cert, key, root, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.num_tickets = 0
    handler = lambda *a, **k: Handler(*a, directory=root, **k)  # noqa: E731
    srv = Server(("0.0.0.0", port), handler)
    srv.ctx = ctx
    srv.serve_forever()


if __name__ == "__main__":
    main()
