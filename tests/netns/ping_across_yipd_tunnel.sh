#!/usr/bin/env bash
# Two namespaces over a veth, a yipd in each: ping both ways over IPv4 and
# over the key-derived IPv6 addresses. Prints handshake time and the RTT
# through the tunnel next to the bare veth's.
. "$(dirname "$0")/lib.sh"

two_peers
start_yipd a
start_yipd b

log "first ping a -> b (starts the handshake)"
ping_ok a 10.77.0.2 1 >/dev/null
grep -h "handshake completed" "$TMP"/a.log "$TMP"/b.log | sed 's/^/    /' || true

log "IPv4 both ways"
rtt_tun=$(ping_ok a 10.77.0.2 20 -i 0.05)
ping_ok b 10.77.0.1 20 -i 0.05 >/dev/null

A6=$(addr_of a)
B6=$(addr_of b)
log "IPv6 key-derived addresses both ways ($A6 <-> $B6)"
ping_ok a "$B6" 10 -i 0.05 >/dev/null
ping_ok b "$A6" 10 -i 0.05 >/dev/null

rtt_bare=$(ping_ok a 198.18.0.2 20 -i 0.05)
log "RTT min/avg/max/mdev: tunnel $rtt_tun, bare veth $rtt_bare"

# The packets really went through yipd: both counted them.
rx=$(peer_field b rx_packets)
[ "${rx:-0}" -ge 31 ] || fail "b counted only ${rx:-0} packets from a"
[ "$(peer_field a established)" = yes ] || fail "a does not report an established session"
log "ok"
