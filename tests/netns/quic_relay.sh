#!/usr/bin/env bash
# Two nodes behind symmetric NATs, relayed through yip-rendezvous over QUIC
# (docs/rendezvous.md, "QUIC"; docs/transports.md, "Fallback"). The server
# listens on UDP 7000 and, with --listen-quic, on UDP 443 (a self-signed
# certificate); a and b name it twice (rendezvous = ADDR:7000 and
# rendezvous = quic://ADDR:443, the same key). Both sites' routers drop
# every datagram to the server's port 7000 (and 7001) and between the
# sites: UDP to the server goes unanswered, the nodes dial QUIC after 2.5 s
# and register over it, and everything between them goes through the
# relay inside the two QUIC connections. Checked: ping both ways, a 4 MiB
# transfer a -> b byte for byte (sha256), a's server link is quic with its
# reason, the server counts two yip connections and relayed datagrams, and
# the routers did drop the nodes' UDP to port 7000. And c, a public node
# on UDP whose datagrams to a's site are dropped, pings a through the relay
# (UDP to QUIC and back). And gtlsclient, no yip node, gets the server's
# HTTP/3 decoy from the same listener.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10
ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_site sitea symmetric 203.0.113.21 10.0.1.1/24
ny_build natlab_site siteb symmetric 203.0.113.22 10.0.2.1/24
ny_build natlab_host sitea a
ny_build natlab_host siteb b
ny_build natlab_public c 203.0.113.23
ny_rdv_start rdv "$S:7000" --listen-quic "$S:443"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_node c 10.77.0.3
ny_conf --line "rendezvous=quic://$S:443" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" a rdv b c
ny_conf --line "rendezvous=quic://$S:443" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" b rdv a
ny_conf c rdv a
# c is on UDP (a public host) and cannot reach a's site directly: only the relay joins them.
in_ns c nft -f - <<NFT
table ip nodirect {
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr 203.0.113.21 meta l4proto udp counter drop
	}
}
NFT
for r in sitea siteb; do
	in_ns "$r" nft -f - <<NFT
table ip noudp {
	chain forward {
		type filter hook forward priority -10; policy accept;
		ip daddr $S udp dport { 7000, 7001 } counter drop
		ip daddr { 203.0.113.21, 203.0.113.22 } ip saddr { 203.0.113.21, 203.0.113.22 } counter drop
	}
	chain postrouting {
		type filter hook postrouting priority 200; policy accept;
		ip daddr { 203.0.113.21, 203.0.113.22 } meta l4proto udp counter drop
	}
}
NFT
done

T0=$EPOCHREALTIME
start_yipd a
start_yipd b
start_yipd c
poll_since "$T0" 15 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' 0.2 ||
	fail "a cannot reach b within 15 s: a: $(yipctl_of a show | grep rendezvous)"
met=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
ping_ok a 10.77.0.2 10 -i 0.1 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.1 >/dev/null
for n in a b; do
	out=$(yipctl_of "$n" show --json)
	kind=$(_ny_json rendezvous.0.link.kind <<<"$out")
	why=$(_ny_json rendezvous.0.link_reason <<<"$out")
	[ "$kind" = quic ] || fail "$n's server is on '$kind', not quic"
	[ "$why" = "udp to the server unanswered for 2.5 s" ] || fail "$n's link_reason is '$why'"
done
o=$(ny_peer a b path)
[ "$(ny_kind a b)" = relayed ] || fail "a's path to b is '$o', not relayed"
log "a reached b in $met s, relayed over QUIC to the server; a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"
read -r secs ok <<<"$(ny_tcp_copy a b 10.77.0.2 $((4 << 20)) 4e6)"
[ "$ok" = yes ] || fail "the 4 MiB copy a -> b through the QUIC relay did not arrive intact ($secs s)"
log "4 MiB a -> b intact (sha256) in $secs s"
conns=$(rdv_get rdv quic.yip_conns)
relayed=$(rdv_get rdv counters.relayed_dgrams)
[ "${conns:-0}" -ge 2 ] || fail "the server counts ${conns:-0} yip QUIC connections, not 2"
[ "${relayed:-0}" -gt 1000 ] || fail "the server relayed only ${relayed:-0} datagrams"
for r in sitea siteb; do
	d=$(in_ns "$r" nft list chain ip noudp forward | sed -n 's/.*dport.*counter packets \([0-9]*\).*/\1/p')
	[ "${d:-0}" -gt 0 ] || fail "$r never dropped UDP to the server's port 7000"
done
# c (UDP) and a (QUIC) through the relay.
# c's lookups of a back off (2 s, 4 s, 8 s): a registers only once it is on QUIC.
poll 20 'in_ns c ping -n -c 1 -W 1 10.77.0.1 >/dev/null 2>&1' 0.2 ||
	fail "c cannot reach a through the relay within 20 s: c: $(ny_peer c a path)"
ping_ok a 10.77.0.3 5 -i 0.1 >/dev/null
[ "$(json_get c show rendezvous.0.link.kind)" = udp ] || fail "c's server is not on udp"
[ "$(ny_kind c a)" = relayed ] || fail "c's path to a is '$(ny_peer c a path)', not relayed"
log "c (UDP) and a (QUIC) ping each other through the relay: c: $(ny_peer c a path)"
# A QUIC client that is no yip node (Debian's gtlsclient) meets the
# server's HTTP/3 decoy on the same listener the nodes use.
mkdir -p "$TMP/h3"
in_ns c timeout 20 gtlsclient --exit-on-all-streams-close --no-quic-dump --no-http-dump \
	--download="$TMP/h3" "$S" 443 "https://$S/" >"$TMP/h3.txt" 2>&1 ||
	fail "gtlsclient against the server's QUIC listener: $(tail -n 5 "$TMP/h3.txt")"
grep -q '^http: stream 0x0 \[:status: 200\]$' "$TMP/h3.txt" || fail "the decoy did not answer 200: $(grep ':status' "$TMP/h3.txt")"
grep -qi '<html' "$TMP/h3"/* || fail "the decoy's page is not HTML"
[ "$(rdv_get rdv quic.decoy_requests)" = 1 ] || fail "the server counts $(rdv_get rdv quic.decoy_requests) decoy requests, not 1"
log "gtlsclient got the decoy's page (200) from the server's QUIC listener"
log "server: $conns yip QUIC connections, $relayed datagrams relayed; $(rdv rdv status | grep -A3 'QUIC:' | tr -s ' ' | tr '\n' ' ')"
log "ok"
