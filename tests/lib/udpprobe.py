#!/usr/bin/env python3
"""udpprobe: plain UDP probes that classify a NAT, with no yip involved.

One server runs on a public host (tests/lib/natlab.sh starts it with
natlab_server); clients run on hosts behind NATs. Messages are one JSON object
per datagram. Results are printed as key=value lines for shell tests.

  server [--ready FILE] ADDR:PORT...
      Binds every ADDR:PORT (two addresses and two ports give the four
      endpoints a full classification needs) and answers:
        echo      -> replies, from the endpoint it reached, with the source
                     address and port it saw (the client's reflexive address);
        send      -> sends one datagram from the bound endpoint "from" to
                     "to" (default: the requester), which the NAT in front of
                     "to" may or may not let through, then (if asked) an ack
                     to the requester from the endpoint it reached;
        register  -> records NAME of session ID at the source it saw; once
                     NAME's PEER (same ID) has registered too, tells each the
                     other's reflexive address (a rendezvous, as for hole
                     punching).
      Writes FILE once every endpoint is bound.

  map [--bind PORT] SERVER:PORT SERVER:PORT...
      From one socket, an echo to each endpoint. Prints "mapped=DEST REFLEXIVE"
      per endpoint and mapping=endpoint-independent (one reflexive address for
      all), address-dependent (one per server address),
      address-and-port-dependent (another for another port of one address)
      or, if no two endpoints share an address,
      address-dependent-or-stricter. Exit 1 if an endpoint does not answer.

  filter [--bind PORT] [--wait S] SERVER:PORT ALT:PORT...
      Contacts SERVER:PORT only, then asks the server to send from each
      (never contacted) ALT endpoint, then from SERVER:PORT itself as a
      control, waiting S seconds (0.3) for each. Prints
      "from=ALT received=yes|no", control=yes|no and
      filtering=endpoint-independent (a datagram from another server address
      got in), address-dependent (only from the contacted address's other
      port) or address-and-port-dependent (neither). Exit 1 if the control
      did not arrive (nothing can be concluded) or the results contradict
      each other.

  inbound --bind PORT --via SERVER:PORT --from ENDPOINT --to ADDR:PORT [--wait S]
      Listens on PORT for S seconds (0.5) and, from a separate socket
      (another local port, so that the mapping of PORT is neither refreshed
      nor recreated), asks the server at SERVER:PORT to send from its
      ENDPOINT to ADDR:PORT, typically PORT's earlier reflexive address. Prints received=yes|no (and from=SOURCE).
      Exit 0 either way; 1 if the server did not acknowledge the request.

  punch --session ID --name NAME --peer PEER [--bind PORT] [--timeout S] SERVER:PORT
      Registers with the rendezvous under ID (both sides of one exchange
      give the same one, each exchange a new one), learns PEER's reflexive
      address, and sends probes to it every 50 ms; a probe from PEER that
      arrives from another address than the one targeted becomes the new
      target (a peer-reflexive candidate, as a symmetric NAT needs). Succeeds when
      both sides have heard each other. Prints peer=REGISTERED,
      heard_from=ADDR (where PEER's probes came from), adopted=yes|no (it
      is not the registered address), elapsed=SECONDS and punch=direct or
      punch=failed. Exit 0 on direct, 1 on failure (after --timeout, 3 s).
"""

import argparse
import json
import select
import socket
import sys
import time


def endpoint(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("want ADDR:PORT, got %r" % text)
    return (host, int(port))


def fmt(addr):
    return "%s:%d" % addr


def out(key, value):
    print("%s=%s" % (key, value), flush=True)


def udp_socket(port=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    return s


def send_json(sock, obj, to):
    try:
        sock.sendto(json.dumps(obj).encode(), to)
    except OSError:
        # An ICMP error from an earlier datagram (a closed port behind a NAT)
        # may be reported here; the probe goes on.
        pass


def recv_json(sock, timeout):
    """One JSON datagram, or (None, None) after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None, None
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return None, None
        try:
            data, src = sock.recvfrom(2048)
            msg = json.loads(data)
        except (OSError, ValueError):
            continue
        if isinstance(msg, dict):
            return msg, src


# Unsolicited datagrams ("note" instead of "id") that arrived while request()
# waited for a reply: kept for await_unsolicited.
NOTES = []


def request(sock, obj, to, tries=5, wait=0.3):
    """Sends obj to the server until a reply with the same id comes back;
    returns it (None if none came). A "send" must be acknowledged."""
    for _ in range(tries):
        send_json(sock, obj, to)
        end = time.monotonic() + wait
        while time.monotonic() < end:
            msg, src = recv_json(sock, end - time.monotonic())
            if msg is None:
                continue
            if "note" in msg:
                NOTES.append((msg, src))
            elif msg.get("id") == obj["id"]:
                if obj.get("op") == "send" and not msg.get("ack"):
                    return None  # refused: no such endpoint
                return msg
    return None


# ---- server -------------------------------------------------------------------


def server(args):
    socks = {}
    for ep in args.endpoints:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(ep)
        socks[ep] = s
    if args.ready:
        open(args.ready, "w").close()
    registered = {}  # (session, name) -> (reflexive address, socket it came in on)
    while True:
        ready, _, _ = select.select(list(socks.values()), [], [])
        for s in ready:
            try:
                data, src = s.recvfrom(2048)
                msg = json.loads(data)
                op = msg.get("op")
            except (OSError, ValueError, AttributeError):
                continue  # not a JSON object
            here = fmt(s.getsockname())
            if op == "echo":
                send_json(s, {"id": msg.get("id"), "seen": fmt(src), "at": here}, src)
            elif op == "send":
                try:
                    frm = socks[endpoint(msg["from"])]
                    to = endpoint(msg["to"]) if msg.get("to") else src
                except (KeyError, argparse.ArgumentTypeError):
                    send_json(s, {"id": msg.get("id"), "error": "no such endpoint"}, src)
                    continue
                # Before the ack: once the client has the ack, the datagram
                # is already on its way.
                send_json(frm, {"note": msg.get("id"), "from": msg["from"]}, to)
                if msg.get("ack"):
                    send_json(s, {"id": msg.get("id"), "ack": True}, src)
            elif op == "register":
                # Keyed by session too, so that a registration left over
                # from an earlier exchange is never handed out.
                ses = str(msg.get("session"))
                name, peer = (ses, str(msg.get("name"))), (ses, str(msg.get("peer")))
                registered[name] = (src, s)
                if peer in registered:
                    for a, b in ((name, peer), (peer, name)):
                        addr, sock = registered[a]
                        send_json(sock, {"op": "peer", "name": b[1],
                                         "addr": fmt(registered[b][0])}, addr)


# ---- clients --------------------------------------------------------------------


def do_map(args):
    s = udp_socket(args.bind)
    seen = {}
    for i, dest in enumerate(args.endpoints):
        reply = request(s, {"op": "echo", "id": i}, dest)
        if reply is None:
            out("mapped", "%s none" % fmt(dest))
            return 1
        seen[dest] = reply["seen"]
        out("mapped", "%s %s" % (fmt(dest), reply["seen"]))
    dests = list(seen)
    pairs = [(a, b) for i, a in enumerate(dests) for b in dests[i + 1:]]
    if not pairs:
        return 0
    # Pairs of destinations on one server address (other port) and on two.
    same_addr = [seen[a] == seen[b] for a, b in pairs if a[0] == b[0]]
    if all(seen[a] == seen[b] for a, b in pairs):
        kind = "endpoint-independent"
    elif same_addr and all(same_addr):
        kind = "address-dependent"
    elif same_addr:
        kind = "address-and-port-dependent"
    else:
        # Only other addresses were probed: the port's part is unknown.
        kind = "address-dependent-or-stricter"
    out("mapping", kind)
    return 0


def await_unsolicited(s, ident, wait):
    """The source of the datagram the server sent for request ident, if it
    arrives within wait seconds; None otherwise."""
    end = time.monotonic() + wait
    while True:
        for note in NOTES:
            if note[0]["note"] == ident:
                NOTES.remove(note)
                return note[1]
        left = end - time.monotonic()
        if left <= 0:
            return None
        msg, src = recv_json(s, left)
        if msg is not None and "note" in msg:
            NOTES.append((msg, src))


def do_filter(args):
    s = udp_socket(args.bind)
    server = args.endpoints[0]
    reply = request(s, {"op": "echo", "id": 0}, server)
    if reply is None:
        out("control", "no")
        return 1
    out("mapped", "%s %s" % (fmt(server), reply["seen"]))
    got = {}
    for i, alt in enumerate(args.endpoints[1:], start=1):
        # The request goes to the contacted endpoint; only the answer comes
        # from the other one.
        if request(s, {"op": "send", "id": i, "from": fmt(alt), "ack": True}, server) is None:
            out("from", "%s received=unknown" % fmt(alt))
            return 1
        got[alt] = await_unsolicited(s, i, args.wait) is not None
        out("from", "%s received=%s" % (fmt(alt), "yes" if got[alt] else "no"))
    control = (request(s, {"op": "send", "id": 99, "from": fmt(server), "ack": True}, server)
               is not None and await_unsolicited(s, 99, 1.0) is not None)
    out("control", "yes" if control else "no")
    if not control:
        return 1
    other_addr = [got[a] for a in got if a[0] != server[0]]
    other_port = [got[a] for a in got if a[0] == server[0]]
    if any(other_addr):
        kind = "endpoint-independent"
        ok = all(other_port) and all(other_addr)
    elif any(other_port):
        kind = "address-dependent"
        ok = all(other_port)
    else:
        kind = "address-and-port-dependent"
        ok = True
    out("filtering", kind if ok else "inconsistent")
    return 0 if ok else 1


def do_inbound(args):
    s = udp_socket(args.bind)
    ctl = udp_socket()
    req = {"op": "send", "id": 7, "from": fmt(args.src), "to": fmt(args.to),
           "ack": True}
    if request(ctl, req, args.via) is None:
        out("received", "unknown")
        return 1
    src = await_unsolicited(s, 7, args.wait)
    out("received", "yes" if src else "no")
    if src:
        out("from", fmt(src))
    return 0


def do_punch(args):
    s = udp_socket(args.bind)
    server = args.endpoints[0]
    start = time.monotonic()
    end = start + args.timeout
    target = registered = None
    while target is None and time.monotonic() < end:
        send_json(s, {"op": "register", "session": args.session, "name": args.name,
                      "peer": args.peer}, server)
        msg, _ = recv_json(s, 0.2)
        if msg and msg.get("op") == "peer" and msg.get("name") == args.peer:
            target = registered = endpoint(msg["addr"])
    if target is None:
        out("peer", "none")
        out("punch", "failed")
        return 1
    out("peer", fmt(registered))
    heard_from = None
    acked = False
    linger = None  # once done, a few more probes so the peer hears "heard"
    next_send = 0.0
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_send:
            send_json(s, {"op": "punch", "name": args.name,
                          "heard": heard_from is not None}, target)
            next_send = now + 0.05
            if linger is not None:
                linger -= 1
                if linger == 0:
                    break
        msg, src = recv_json(s, max(0.0, next_send - time.monotonic()))
        if msg is None or msg.get("op") != "punch" or msg.get("name") != args.peer:
            continue
        heard_from = src
        if src != target:
            target = src  # peer-reflexive: answer where the peer really is
        if msg.get("heard"):
            acked = True
        if acked and linger is None:
            linger = 6
    out("elapsed", "%.2f" % (time.monotonic() - start))
    out("heard_from", fmt(heard_from) if heard_from else "none")
    out("adopted", "yes" if heard_from and heard_from != registered else "no")
    direct = heard_from is not None and acked
    out("punch", "direct" if direct else "failed")
    return 0 if direct else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("server")
    c.add_argument("--ready")
    c.add_argument("endpoints", type=endpoint, nargs="+")
    c = sub.add_parser("map")
    c.add_argument("--bind", type=int, default=0)
    c.add_argument("endpoints", type=endpoint, nargs="+")
    c = sub.add_parser("filter")
    c.add_argument("--bind", type=int, default=0)
    c.add_argument("--wait", type=float, default=0.3)
    c.add_argument("endpoints", type=endpoint, nargs="+")
    c = sub.add_parser("inbound")
    c.add_argument("--bind", type=int, required=True)
    c.add_argument("--via", type=endpoint, required=True)
    c.add_argument("--from", dest="src", type=endpoint, required=True)
    c.add_argument("--to", type=endpoint, required=True)
    c.add_argument("--wait", type=float, default=0.5)
    c = sub.add_parser("punch")
    c.add_argument("--name", required=True)
    c.add_argument("--peer", required=True)
    c.add_argument("--session", required=True)
    c.add_argument("--bind", type=int, default=0)
    c.add_argument("--timeout", type=float, default=3.0)
    c.add_argument("endpoints", type=endpoint, nargs=1)
    args = p.parse_args()
    if args.cmd == "filter" and len(args.endpoints) < 2:
        p.error("filter needs SERVER:PORT and at least one ALT:PORT")
    return {"server": server, "map": do_map, "filter": do_filter,
            "inbound": do_inbound, "punch": do_punch}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
