#!/usr/bin/env bash
# The same configuration on a network that drops all UDP and on one that
# does not (docs/transports.md, "Fallback"). A yip-rendezvous with a UDP
# port and a TLS front; nodes a and b name it twice (rendezvous = ADDR and
# rendezvous = tls://ADDR, the same key) and know each other by key only.
# Every UDP datagram to or from a and b is dropped (a network that blocks
# UDP blocks it both ways; with only their sends dropped, c's Inits reach a
# directly and a's answers go back that way, into the drop, until c tries
# the relay alone, 7 s in): within 10 s of start they
# register over TLS and ping each other through the front's relay (a's
# server says "over tls" and why); c, whose UDP passes, reaches a through
# the relay too (c by UDP, a by TLS). Then UDP is let through with a ping
# running every 100 ms: a and b must be direct over UDP within 10 s, and
# not one echo may be lost across the switch; a's server moves back to UDP
# too (by a's next registration, 10 s at most) and the TLS link goes.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10
ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_public a 203.0.113.21
ny_build natlab_public b 203.0.113.22
ny_build natlab_public c 203.0.113.23
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=www.example.com" -addext "subjectAltName=DNS:www.example.com" \
	-keyout "$TMP/front.key" -out "$TMP/front.crt" 2>/dev/null || fail "openssl req failed"
ny_rdv_start rdv "$S:7000" --listen-tcp "$S:443" --tls-cert "$TMP/front.crt" --tls-key "$TMP/front.key"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_node c 10.77.0.3
for n in a b c; do
	case $n in a) peers="b c" ;; b) peers=a ;; c) peers=a ;; esac
	# shellcheck disable=SC2086 # the peers are words
	ny_conf --line "rendezvous=tls://$S:443" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" \
		--line "tls_sni=www.example.com" "$n" rdv $peers
	[ "$n" = c ] && continue
	ny_drop_udp "$n"
done

T0=$EPOCHREALTIME
start_yipd a
start_yipd b
start_yipd c
log "all UDP to and from a and b dropped: they must meet over the TLS front"
poll_since "$T0" 10 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' 0.2 ||
	fail "a cannot reach b within 10 s: a: $(yipctl_of a show | grep rendezvous)"
met=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
[ "$(ny_kind a b)" = relayed ] || fail "a's path to b is '$(ny_peer a b path)', not relayed"
out=$(yipctl_of a show --json)
kind=$(_ny_json rendezvous.0.link.kind <<<"$out")
why=$(_ny_json rendezvous.0.link_reason <<<"$out")
sni=$(_ny_json rendezvous.0.link.sni <<<"$out")
[ "$kind" = tls ] || fail "a's server is on '$kind', not tls"
[ "$sni" = www.example.com ] || fail "a's TLS link sent SNI '$sni'"
log "a reached b in $met s, relayed over TLS to the server ($why)"
log "a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"
d=$(in_ns a nft list chain inet noudp output | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
[ "${d:-0}" -gt 0 ] || fail "a's UDP was never dropped"
# c is on UDP, a on TLS: the relay carries them across.
wait_ping c 10.77.0.1
ping_ok a 10.77.0.3 5 -i 0.1 >/dev/null
[ "$(json_get c show rendezvous.0.link.kind)" = udp ] || fail "c's server is not on udp"
[ "$(ny_kind c a)" = relayed ] || fail "c's path to a is '$(ny_peer c a path)', not relayed"
log "c (UDP) and a (TLS) ping each other through the relay: c: $(ny_peer c a path)"
streams=$(rdv_get rdv tls_front.yip_streams)
[ "${streams:-0}" -ge 2 ] || fail "the front counts ${streams:-0} yip streams, not 2"

log "ping every 100 ms; UDP is let through 2 s in"
in_ns a ping -n -i 0.1 -c 150 -W 2 10.77.0.2 >"$TMP/ping.out" 2>&1 &
PINGER=$!
sleep 2
for n in a b; do in_ns "$n" nft delete table inet noudp; done
T1=$EPOCHREALTIME
poll_since "$T1" 10 '[ "$(ny_kind a b)" = direct ] && [ "$(ny_kind b a)" = direct ]' 0.2 ||
	fail "not direct 10 s after UDP came back: a: $(ny_peer a b path), b: $(ny_peer b a path)"
log "direct on both ends $(awk -v a="$T1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s after UDP came back: a: $(ny_peer a b path)"
case $(ny_peer a b path) in *tls*) fail "a's direct path is a TLS link" ;; esac
wait "$PINGER" || true
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$TMP/ping.out")
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$TMP/ping.out")
[ "${sent:-0}" = 150 ] && [ "${got:-0}" = 150 ] ||
	fail "echoes lost across the switch: $(tail -n 2 "$TMP/ping.out" | tr '\n' ' ')"
log "150 echoes, 100 ms apart, across the switch: all answered"
# The server too: a's REGISTERs go by UDP as well while it is on TLS; once
# the server challenges that address and a answers, a is back on UDP and
# lets the TLS link go.
poll 12 '[ "$(json_get a show rendezvous.0.link.kind)" = udp ] && [ "$(json_get a stats datapath.tls_links)" = 0 ]' 0.3 ||
	fail "a's server is still on $(json_get a show rendezvous.0.link.kind) ($(json_get a stats datapath.tls_links) TLS links)"
log "a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"
log "ok"
