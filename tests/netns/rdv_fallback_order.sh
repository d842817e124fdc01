#!/usr/bin/env bash
# drivers: one (control plane: which link the server is reached over does not depend on the I/O driver)
# The fallback order UDP, then QUIC, then TLS (docs/transports.md,
# "Fallback"). Nodes a and b name one yip-rendezvous three times (its UDP
# port, quic:// and tls://, the same key) on a network that drops all of
# their UDP, QUIC included: UDP goes unanswered for 2.5 s, then QUIC for
# 5 s, and only then may the node dial TLS. Checked: no TCP to the TLS
# front leaves a in its first 6 s; a did try QUIC (its Initials to UDP 443
# were dropped); a and b then register over TLS and ping each other
# through the relay; a's server says "tls" and why (QUIC went unanswered).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10
ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_public a 203.0.113.21
ny_build natlab_public b 203.0.113.22
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=www.example.com" -addext "subjectAltName=DNS:www.example.com" \
	-keyout "$TMP/front.key" -out "$TMP/front.crt" 2>/dev/null || fail "openssl req failed"
ny_rdv_start rdv "$S:7000" --listen-tcp "$S:443" --tls-cert "$TMP/front.crt" --tls-key "$TMP/front.key" \
	--listen-quic "$S:443"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
for n in a b; do
	case $n in a) peers=b ;; b) peers=a ;; esac
	ny_conf --line "rendezvous=quic://$S:443" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" \
		--line "rendezvous=tls://$S:443" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" \
		"$n" rdv $peers
	in_ns "$n" nft -f - <<NFT
table inet noudp {
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "lo" accept
		udp dport 443 counter drop
		meta l4proto udp counter drop
		tcp dport 443 tcp flags syn counter
	}
}
NFT
done
# counters NS: the drop counts of UDP to 443 (QUIC), other UDP, and TCP SYNs to 443.
counters() {
	in_ns "$1" nft list chain inet noudp output | sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | tr '\n' ' '
}

T0=$EPOCHREALTIME
start_yipd a
start_yipd b
sleep_until=$(awk -v a="$T0" 'BEGIN { printf "%.3f", a + 6 }')
while awk -v t="$sleep_until" -v n="$EPOCHREALTIME" 'BEGIN { exit !(n < t) }'; do sleep 0.1; done
read -r quic udp syn <<<"$(counters a)"
log "a after 6 s: $udp UDP datagrams and $quic to UDP 443 dropped, $syn TCP SYNs to 443"
[ "${udp:-0}" -gt 0 ] || fail "a sent no UDP to the server"
[ "${syn:-0}" = 0 ] || fail "a dialed TLS within 6 s (before QUIC had its 5 s after UDP's 2.5 s)"
poll_since "$T0" 15 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' 0.2 ||
	fail "a cannot reach b within 15 s: a: $(yipctl_of a show | grep rendezvous)"
met=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
[ "$(ny_kind a b)" = relayed ] || fail "a's path to b is '$(ny_peer a b path)', not relayed"
out=$(yipctl_of a show --json)
kind=$(_ny_json rendezvous.0.link.kind <<<"$out")
why=$(_ny_json rendezvous.0.link_reason <<<"$out")
[ "$kind" = tls ] || fail "a's server is on '$kind', not tls"
[ "$why" = "quic to the server unanswered for 5 s" ] || fail "a's link_reason is '$why'"
read -r quic udp syn <<<"$(counters a)"
[ "${syn:-0}" -gt 0 ] || fail "a is on TLS but no SYN to 443 was counted"
[ "${quic:-0}" -gt 0 ] || fail "a never tried QUIC (no UDP to port 443 was dropped)"
log "a reached b in $met s over TLS ($why); a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"
log "ok"
