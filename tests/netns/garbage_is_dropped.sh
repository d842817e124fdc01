#!/usr/bin/env bash
# Random, truncated, well-sized-but-forged and oversized datagrams at yipd's
# port: the daemon keeps running, counts every kind of drop, and the tunnel
# still carries traffic.
. "$(dirname "$0")/lib.sh"

two_peers
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null

in_ns a python3 - <<'PY'
import os, random, socket
random.seed(1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.1", 0))
dst = ("198.18.0.2", 51820)
def send(b): s.sendto(b, dst)
for _ in range(500):                                  # random bytes, random sizes
    send(os.urandom(random.randint(0, 1500)))
for t, n in ((1, 50), (2, 10), (4, 20), (1, 200), (9, 100)):   # wrong lengths / types
    for _ in range(20):
        send(bytes([t, 0, 0, 0]) + os.urandom(n))
send(b"")
for _ in range(50):                                   # right sizes (Init 149, Resp 77), forged contents
    send(b"\x01\0\0\0" + os.urandom(145))
    send(b"\x02\0\0\0" + os.urandom(73))
    send(b"\x04\0\0\0" + os.urandom(random.randint(28, 1400)))
for n in (9100, 20000, 65000):                        # bigger than any yip datagram
    send(os.urandom(n))
PY
# moved: every counter checked below has moved.
moved() {
	local r
	for r in malformed truncated bad_mac1 unknown_index; do [ "$(drops b $r)" -gt 0 ] || return 1; done
}
poll 5 moved || true

kill -0 "$(pid_of b)" 2>/dev/null || fail "yipd b died"
for r in malformed truncated bad_mac1 unknown_index; do
	n=$(drops b $r)
	[ "${n:-0}" -gt 0 ] || fail "b's $r counter did not move (${n:-?})"
	log "b counted $r=$n"
done
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.05 >/dev/null
log "ok: daemon alive, drops counted, tunnel still up"
