#!/usr/bin/env bash
# Peers over a TLS link (docs/transports.md): three nodes on one bridge;
# every UDP datagram between a and b is dropped by nftables, so a reaches
# b only by dialing its listen_tls (endpoint = tls://...); c talks UDP to
# both at the same time. Ping and a byte-exact transfer a -> b over TLS,
# pings a <-> c over UDP during it; the path says TLS, the drop counters
# say UDP really was blocked, and the daemons sent no FEC repairs on it.
. "$(dirname "$0")/lib.sh"

mesh a b c
# a dials b over TLS; b listens (with a self-signed certificate: no tls_cert).
sed -i "s|^endpoint=198.18.0.2:51820|endpoint=tls://198.18.0.2:8443|" "$TMP/a.conf"
sed -i "1a listen_tls=198.18.0.2:8443" "$TMP/b.conf"
for n in a b; do
	o=$([ "$n" = a ] && echo 198.18.0.2 || echo 198.18.0.1)
	in_ns "$n" nft -f - <<NFT
table inet yipblock {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr $o meta l4proto udp counter drop
	}
}
NFT
done
start_yipd a
start_yipd b
start_yipd c

log "ping a -> b over TLS"
wait_ping a 10.77.0.2 10 || fail "a cannot reach b over TLS"
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
path=$(peer_field a path)
case $path in *"tls link"*) ;; *) fail "a's path to b is '$path', not a TLS link" ;; esac
log "a's path to b: $path"
[ "$(peer_field a link.kind)" = tls ] || fail "a's link to b is not tls"
[ "$(peer_field a link.tls_version)" = TLSv1.3 ] || fail "a's TLS link is not TLS 1.3"
[ "$(peer_field b link.accepted)" = yes ] || { yipctl_of b show; fail "b does not show its link from a as accepted"; }
yipctl_of a show | grep -q "over tls (TLSv1.3, SNI none, dialed)" || fail "yipctl show does not say the link"

log "20 MB a -> b over TLS, with a and c pinging each other over UDP"
in_ns a ping -c 40 -i 0.05 10.77.0.3 >"$TMP/ping-ac.txt" 2>&1 &
pinger=$!
PIDS+=("$pinger")
read -r secs ok < <(tcp_copy a 10.77.0.2 $((20 << 20)))
wait "$pinger" || true
[ "$ok" = yes ] || fail "the transfer over TLS did not arrive intact"
log "20 MB over TLS in $secs s, sha256 match: $ok"
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$TMP/ping-ac.txt")
[ "${got:-0}" -ge 38 ] || fail "a -> c over UDP during the transfer: only ${got:-0}/40 pings"
ping_ok c 10.77.0.2 5 -i 0.1 >/dev/null
case $(json_get c show "peers.0.path") in *tls*) fail "c's path is TLS" ;; esac

# UDP between a and b really was dropped, and nothing went around it.
for n in a b; do
	d=$(in_ns "$n" nft list table inet yipblock | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
	log "$n dropped $d UDP datagrams from the other"
done
# b's listener against a prober on c: HTTP over TLS is not a frame (the
# connection closes, counted), and of 12 connections held open from one
# address only 8 are taken; a's link is untouched.
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' |
	in_ns c timeout 5 openssl s_client -quiet -connect 198.18.0.2:8443 >/dev/null 2>&1 || true
[ "$(json_get b stats datapath.tls_bad_frames)" -ge 1 ] || fail "b kept a connection that sent HTTP"
in_ns c python3 -c '
import socket, time
s = [socket.create_connection(("198.18.0.2", 8443)) for _ in range(12)]
time.sleep(1)
' || fail "the prober could not connect"
busy=$(json_get b stats datapath.tls_refused_busy)
[ "$busy" -ge 4 ] || fail "b took more than 8 connections from one address (refused $busy)"
ping_ok a 10.77.0.2 5 -i 0.1 >/dev/null
log "b's listener: HTTP closed as a broken frame, $busy of 12 held connections from one source refused"

# A reliable link carries no FEC repairs.
rep=$(peer_field a repair_sent)
[ "${rep:-x}" = 0 ] || fail "a sent $rep FEC repairs over TLS"
log "ok"
