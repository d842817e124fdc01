#!/usr/bin/env bash
# Rekey every 2 s while pinging every 50 ms: not one echo may be lost.
. "$(dirname "$0")/lib.sh"

two_peers
start_yipd a YIP_REKEY_INTERVAL_MS=2000
start_yipd b YIP_REKEY_INTERVAL_MS=2000

ping_ok a 10.77.0.2 1 >/dev/null
log "ping -i 0.05 -c 200 across ~5 rekeys"
ping_ok a 10.77.0.2 200 -i 0.05 >/dev/null

hs=$(peer_field a handshakes)
[ "${hs:-0}" -ge 4 ] || fail "expected at least 4 handshakes in 10 s, a counted ${hs:-0}"
hsb=$(peer_field b handshakes)
for r in replay decrypt expired unknown_index; do
	n=$(drops b $r)
	[ "${n:-1}" -eq 0 ] || fail "b dropped $n datagrams as $r across rekeys"
done
log "ok: $hs handshakes on a, $hsb on b, no loss"
