#!/usr/bin/env bash
# Two nodes whose UDP is dropped both ways meet through a REALITY front
# (docs/transports.md, "The REALITY front"). The "real site" is an HTTPS
# server (tests/tls/realsite.py, OpenSSL) with a certificate from a CA the
# test makes, on its own host; yip-rendezvous on another host has a UDP
# port and, on TCP 443, a REALITY front for that site. Nodes a and b name
# the server as reality://FRONT:443?pbk=..&sid=..&sni=www.example.com:
#   - they register over the front and ping each other through its relay,
#     and a 4 MiB file crosses byte-exact (its SHA-256 on both ends);
#   - yipctl show names the REALITY link (kind reality, the site's SNI);
#   - the front counts two sealed hellos that became yip streams, and the
#     site logged their hellos (mirrored to it) but no handshake of theirs;
#   - meanwhile curl through the front, with the test CA, gets the site's
#     page and the site's certificate.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"

reality_lab a=203.0.113.21 b=203.0.113.22 v=203.0.113.40
reality_front
grep -q "REALITY front on TCP $S:443" "$TMP/rdv.log" || fail "the start log names no REALITY front"

ny_node a 10.77.0.1
ny_node b 10.77.0.2
for n in a b; do
	case $n in a) peer=b ;; b) peer=a ;; esac
	ny_conf --line "rendezvous=reality://$S:443?pbk=$REALITY_PUB&sid=abcd12&sni=www.example.com" \
		--line "rendezvous_key=${NY_RDV_PUB[rdv]}" "$n" rdv "$peer"
	ny_drop_udp "$n"
done

T0=$EPOCHREALTIME
start_yipd a
start_yipd b
log "UDP dropped: a and b must meet through the REALITY front"
poll_since "$T0" 15 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' 0.2 ||
	fail "a cannot reach b within 15 s: a: $(yipctl_of a show | grep -A1 rendezvous)"
log "a reached b in $(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
ping_ok a 10.77.0.2 10 -i 0.1 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.1 >/dev/null
[ "$(ny_kind a b)" = relayed ] || fail "a's path to b is '$(ny_peer a b path)', not relayed"
out=$(yipctl_of a show --json)
kind=$(_ny_json rendezvous.0.link.kind <<<"$out")
sni=$(_ny_json rendezvous.0.link.sni <<<"$out")
[ "$kind" = reality ] || fail "a's server is on '$kind', not reality"
[ "$sni" = www.example.com ] || fail "a's REALITY link sent SNI '$sni'"
log "a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"

log "4 MiB from a to b through the front, byte-exact"
read -r secs ok <<<"$(ny_tcp_copy a b 10.77.0.2 4194304 1e12)"
[ "$ok" = yes ] || fail "the 4 MiB copy through the front arrived changed or not at all ($secs s)"
log "4 MiB in $secs s: $(awk -v s="$secs" 'BEGIN { printf "%.0f", 4194304 * 8 / s / 1e6 }') Mbit/s"

got=$(rdv_get rdv reality.yip_streams)
auth=$(rdv_get rdv reality.outcomes.authenticated)
[ "${got:-0}" -ge 2 ] && [ "${auth:-0}" -ge 2 ] ||
	fail "the front counts ${got:-0} yip streams and ${auth:-0} sealed hellos, wanted 2 each"
# The site saw the nodes' hellos (the front mirrors every hello) but
# completed no handshake for them (the front closed its side first): one
# handshake only, the front's own at start, which learns the site's tickets.
ok=$(grep -c "^$S:.* handshake ok" "$TMP/site.log" || true)
[ "$ok" = 1 ] || fail "the site completed $ok handshakes with the front, not 1: $(cat "$TMP/site.log")"
grep -q "and it sends 2 after a client.s Finished" "$TMP/rdv.log" ||
	fail "the front did not learn the site's two tickets: $(grep reality: "$TMP/rdv.log")"

log "curl through the front gets the site, with the site's certificate"
reality_curl_same v "$S"
rdv rdv status --summary | sed -n '/REALITY front/,/yip streams/p' | sed 's/^/    /'
log "ok"
