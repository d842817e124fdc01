# A tiny DNS responder for tests: answers A queries for one name with the
# IPv4 address in a file (re-read per query), NODATA for anything else.
import socket, struct, sys
name, addr_file = sys.argv[1].lower().rstrip('.'), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 12:
        continue
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i, labels = 12, []
    while i < len(q) and q[i] != 0:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += 1 + q[i]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    ans = b""
    if ".".join(labels).lower() == name and qtype == 1:
        ip = open(addr_file).read().strip()
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + socket.inet_aton(ip)
    rcode = 0 if ".".join(labels).lower() == name else 3
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, 1 if ans else 0, 0, 0)
    s.sendto(hdr + question + ans, peer)
