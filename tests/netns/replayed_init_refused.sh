#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# An Init captured off the wire and replayed later, from another source
# port, must neither disturb the live session nor move b's idea of where a is.
. "$(dirname "$0")/lib.sh"

two_peers
start_yipd a
start_yipd b

ip netns exec "$(ns b)" tcpdump -i "v${NSP}b" --immediate-mode -U -n -w "$TMP/init.pcap" 'udp dst port 51820' \
	>"$TMP/tcpdump.out" 2>&1 &
TCPDUMP=$!
PIDS+=($TCPDUMP)
poll 5 'grep -q listening "$TMP/tcpdump.out"' || fail "tcpdump did not start: $(cat "$TMP/tcpdump.out")"

ping_ok a 10.77.0.2 3 -i 0.1 >/dev/null
sleep 0.3
kill "$TCPDUMP"; wait "$TCPDUMP" 2>/dev/null || true

# Pull the first Init's UDP payload out of the capture (pcap, Ethernet, IPv4).
pcap_pick "$TMP/init.pcap" "$TMP/init.bin" 1 198.18.0.1 || fail "no Init of a's in the capture"
log "captured an Init ($(stat -c %s "$TMP/init.bin") bytes); replaying it 5 times from port 40000"

hs_before=$(peer_field b handshakes)
ep_before=$(peer_field b endpoint)
stale_before=$(drops b stale_init)
in_ns a python3 - "$TMP/init.bin" <<'PY'
import socket, sys, time
init = open(sys.argv[1], "rb").read()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.1", 40000))
for _ in range(5):
    s.sendto(init, ("198.18.0.2", 51820))
    time.sleep(0.1)  # apart by more than the one costly Init a peer may cause per 50 ms
PY
poll 5 '[ $(($(drops b stale_init) - stale_before)) -ge 5 ]' || true

stale=$(($(drops b stale_init) - stale_before))
[ "$stale" -ge 5 ] || fail "b refused $stale of the 5 replays as stale"
[ "$(peer_field b handshakes)" = "$hs_before" ] || fail "a replayed Init completed a handshake on b"
[ "$(peer_field b endpoint)" = "$ep_before" ] || fail "b's endpoint for a moved to $(peer_field b endpoint)"
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.05 >/dev/null
log "ok: $stale replays refused, endpoint still $ep_before, session intact"
