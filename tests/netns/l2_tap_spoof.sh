#!/usr/bin/env bash
# TAP mode against a peer that lies about source MACs. Three TAP nodes in a
# full mesh; once a, b and c have talked, c sends Ethernet frames from its
# device (so its yipd carries them to the others) with
#   - a's MAC as the source: b and a drop them (source_not_allowed), and
#     b's unicast to a still goes to a, not to c;
#   - b's own MAC as the source (an address on b's side): b drops them;
#   - thousands of made-up source MACs: b learns at most its quota from c,
#     and a's entry survives: b's unicast to a is still not flooded to c.
# c watches its wire (its veth, where anything the others' yipds send it
# arrives): not one of b's echo requests to a reaches it, while b's echo
# requests to c itself, sent in the same window, do (or the watcher could
# not have seen a leak). Not c's device: once c's yipd holds b's MAC for
# c's own side, it drops every frame from b, so the device would see
# nothing either way.
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
mac_c=$(in_ns c cat /sys/class/net/yip0/address)

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

# watch_start: until watch_stop, c counts the yip datagrams that arrive on
# its wire, by size: 1 000 bytes or more (b pings a with 1 100 bytes of
# payload: none may come to c: the leak) and 500 to 999 (b pings c with 500:
# the control). Nothing else sent in the window is that big (keepalives,
# handshakes, ARP and neighbour discovery stay under 200 bytes). It returns
# once the watcher's socket is bound.
watch_start() {
	rm -f "$TMP/watch.ready" "$TMP/watch.stop"
	ip netns exec "$(ns c)" python3 - "vc$NSP" "$TMP/watch" >"$TMP/watch.count" <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0)); s.settimeout(0.2)
open(sys.argv[2] + ".ready", "w").close()
leak = control = 0
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        f, addr = s.recvfrom(4096)
    except socket.timeout:
        if os.path.exists(sys.argv[2] + ".stop"):  # asked to stop, and nothing queued
            break
        continue
    if addr[2] == socket.PACKET_OUTGOING or f[23] != 17:
        continue
    udp = f[14 + (f[14] & 15) * 4:]
    if udp[2:4] != (51820).to_bytes(2, "big"):
        continue
    size = int.from_bytes(udp[4:6], "big") - 8
    leak += size >= 1000
    control += 500 <= size < 1000
print(leak, control)
PY
	WATCH=$!
	PIDS+=("$WATCH")
	poll 10 '[ -e "$TMP/watch.ready" ]' || fail "c's watcher did not start"
}
# watch_stop SENT: stops the watcher; fails if any of b's echo requests to
# a reached c, or if fewer than SENT of b's echo requests to c did.
watch_stop() {
	local leak control
	touch "$TMP/watch.stop"
	wait "$WATCH"
	read -r leak control <"$TMP/watch.count"
	[ "$control" -ge "$1" ] ||
		fail "c's wire saw $control datagrams for b's $1 echo requests to c: the watcher could not have seen a leak"
	[ "$leak" = 0 ] || fail "c's wire saw $leak datagrams of b's echo requests to a"
	log "c's wire saw $control datagrams for b's $1 echo requests to c, none for those to a"
}
# ping_b_c: b sends 10 echo requests of 500 bytes to c; prints how many it sent.
ping_b_c() {
	in_ns b ping -n -q -c 10 -i 0.1 -W 1 -s 500 10.77.0.3 2>&1 | sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p'
}

before=$(drops b source_not_allowed)
log "c claims a's MAC ($mac_a)"
inject "$mac_a" 50
poll 5 '[ $(($(drops b source_not_allowed) - before)) -ge 50 ] && [ "$(drops a source_not_allowed)" -ge 50 ]' || true
got=$(($(drops b source_not_allowed) - before))
[ "$got" -ge 50 ] || fail "b dropped $got of 50 frames from c claiming a's MAC"
[ "$(drops a source_not_allowed)" -ge 50 ] || fail "a accepted frames with its own MAC from c"
watch_start
ping_ok b 10.77.0.1 10 -i 0.1 -s 1100 >/dev/null
watch_stop "$(ping_b_c)"
log "b dropped them; b's pings to a still go to a only"

log "c claims b's own MAC ($mac_b)"
before=$(drops b source_not_allowed)
inject "$mac_b" 20
poll 5 '[ $(($(drops b source_not_allowed) - before)) -ge 20 ]' || true
got=$(($(drops b source_not_allowed) - before))
[ "$got" -ge 20 ] || fail "b dropped $got of 20 frames from c with b's own MAC"

log "c makes up 5000 source MACs"
inject random 5000
sleep 1
# c no longer answers b, ARP included: b's entry for c, once stale, would
# fail in seconds and stop its pings to c. Given, the control does not
# depend on that timing.
in_ns b ip neigh replace 10.77.0.3 lladdr "$mac_c" dev yip0 nud permanent
watch_start
ping_ok b 10.77.0.1 10 -i 0.1 -s 1100 >/dev/null
watch_stop "$(ping_b_c)"
# a and b still reach each other (c, whose own yipd now takes the made-up
# addresses and b's for its side's, only cut itself off).
ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
log "ok: a's entry held; b's unicast to a never reached c"
