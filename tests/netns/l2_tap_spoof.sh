#!/usr/bin/env bash
# TAP mode against a peer that lies about source MACs. Three TAP nodes in a
# full mesh; once a, b and c have talked, c sends Ethernet frames from its
# device (so its yipd carries them to the others) with
#   - a's MAC as the source: b and a drop them (source_not_allowed), and
#     b's unicast to a still goes to a, not to c;
#   - b's own MAC as the source (an address on b's side): b drops them;
#   - thousands of made-up source MACs: b learns at most its quota from c,
#     and a's entry survives: b's unicast to a is still not flooded to c.
# c watches its own device: not one of b's echo requests to a reaches it.
. "$(dirname "$0")/lib.sh"

mesh a b c
as_tap a b c
for n in a b c; do start_yipd "$n"; done
for n in a b c; do
	for m in a b c; do
		[ "$n" = "$m" ] && continue
		ping_ok "$n" "10.77.0.$(idx_of "$m")" 2 -i 0.05 >/dev/null
	done
done
mac_a=$(in_ns a cat /sys/class/net/yip0/address)
mac_b=$(in_ns b cat /sys/class/net/yip0/address)

# inject SRC COUNT: c sends COUNT broadcast frames from its device with
# source SRC ("random": a new made-up MAC each time).
inject() {
	in_ns c python3 - "$1" "$2" <<'PY'
import os, socket, sys
src, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("yip0", 0))
for i in range(count):
    mac = bytes([0x02, 0x5a]) + os.urandom(4) if src == "random" else bytes.fromhex(src.replace(":", ""))
    s.send(b"\xff" * 6 + mac + b"\x88\xb5" + bytes(46))
PY
}

# watch_c SECONDS: counts echo requests to 10.77.0.1 that reach c's device.
watch_c() {
	in_ns c python3 - "$1" >"$TMP/watch.count" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind(("yip0", 0)); s.settimeout(0.2)
end, n = time.time() + float(sys.argv[1]), 0
while time.time() < end:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    if f[12:14] == b"\x08\x00" and f[14 + 9] == 1 and f[30:34] == bytes([10, 77, 0, 1]) and f[34] == 8:
        n += 1
print(n)
PY
	WATCH=$!
	sleep 0.3
}

before=$(drops b source_not_allowed)
log "c claims a's MAC ($mac_a)"
inject "$mac_a" 50
sleep 0.5
got=$(($(drops b source_not_allowed) - before))
[ "$got" -ge 50 ] || fail "b dropped $got of 50 frames from c claiming a's MAC"
[ "$(drops a source_not_allowed)" -ge 50 ] || fail "a accepted frames with its own MAC from c"
watch_c 3
ping_ok b 10.77.0.1 10 -i 0.1 >/dev/null
wait "$WATCH"
[ "$(cat "$TMP/watch.count")" = 0 ] || fail "c received $(cat "$TMP/watch.count") of b's echo requests to a"
log "b dropped them; b's pings to a still go to a only"

log "c claims b's own MAC ($mac_b)"
before=$(drops b source_not_allowed)
inject "$mac_b" 20
sleep 0.5
got=$(($(drops b source_not_allowed) - before))
[ "$got" -ge 20 ] || fail "b dropped $got of 20 frames from c with b's own MAC"

log "c makes up 5000 source MACs"
inject random 5000
sleep 1
watch_c 3
ping_ok b 10.77.0.1 10 -i 0.1 >/dev/null
wait "$WATCH"
[ "$(cat "$TMP/watch.count")" = 0 ] || fail "after the churn c received $(cat "$TMP/watch.count") of b's echo requests to a"
# a and b still reach each other (c, whose own yipd now takes the made-up
# addresses and b's for its side's, only cut itself off).
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
log "ok: a's entry held; b's unicast to a never reached c"
