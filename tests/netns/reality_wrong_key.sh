#!/usr/bin/env bash
# drivers: one (control plane: a TLS dial to the REALITY front and its backoff; no data path)
# A node with the wrong key for a REALITY front reaches the real site,
# refuses it, backs off and says so (docs/transports.md, "The REALITY
# front"). Node a names the front with another key pair's public key as
# pbk; its UDP is dropped, so the front is its only way:
#   - its hello does not open at the front and is spliced to the site, whose
#     certificate a does not take: the site logs each handshake as failed
#     with a's bad_certificate alert, and a has no link;
#   - yipctl show says why, in the server's dial_error;
#   - it dials again with a backoff that doubles: at most 5 dials in 12 s;
#   - given the right key (the config rewritten, yipd restarted) it registers.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"

reality_lab a=203.0.113.21
reality_front
wrong=$("$RDV" --reality-genkey | sed -n 's/^public=//p')

ny_node a 10.77.0.1
ny_conf --line "rendezvous=reality://$S:443?pbk=$wrong&sid=abcd12&sni=www.example.com" \
	--line "rendezvous_key=${NY_RDV_PUB[rdv]}" a rdv
ny_drop_udp a
T0=$EPOCHREALTIME
start_yipd a
log "a dials the front with the wrong key"
poll 6 '[ "$(json_get a show rendezvous.0.dial_error)" != null ]' 0.2 ||
	fail "a says nothing of its failed dials: $(yipctl_of a show | grep -A1 rendezvous)"
why=$(json_get a show rendezvous.0.dial_error)
case $why in *"the real site answered"*) ;; *) fail "a's dial_error: $why" ;; esac
log "a: $(yipctl_of a show | grep 'rendezvous:' | sed 's/^ *//')"
sleep_until=$(awk -v a="$T0" 'BEGIN { printf "%.1f", a + 12 }')
while awk -v t="$sleep_until" -v n="$EPOCHREALTIME" 'BEGIN { exit !(n < t) }'; do sleep 0.5; done
dials=$(json_get a stats datapath.tls_dialed)
[ "${dials:-0}" -ge 3 ] && [ "${dials:-0}" -le 5 ] ||
	fail "a dialed ${dials:-0} times in 12 s: wanted 3 to 5 (a doubling backoff from 1 s)"
[ "$(ny_server_state a 0)" != registered ] || fail "a registered with the wrong key"
seal=$(rdv_get rdv reality.outcomes.seal)
[ "$seal" = "$dials" ] || fail "the front spliced $seal hellos for a's $dials dials"
bad=$(grep -c "^$S:.* handshake failed .*BAD_CERTIFICATE" "$TMP/site.log" || true)
[ "$bad" = "$dials" ] || fail "the site saw $bad refused certificates for $dials dials: $(cat "$TMP/site.log")"
log "$dials dials in 12 s, each spliced to the site and refused there by a (bad_certificate)"

log "the right key: a registers"
kill "$(pid_of a)"
wait "$(pid_of a)" 2>/dev/null || true
sed -i "s/pbk=$wrong/pbk=$REALITY_PUB/" "$TMP/a.conf"
start_yipd a
poll 10 '[ "$(ny_server_state a 0)" = registered ]' 0.2 ||
	fail "a did not register with the right key: $(yipctl_of a show | grep -A1 rendezvous)"
[ "$(json_get a show rendezvous.0.link.kind)" = reality ] || fail "a's server link is not reality"
[ "$(json_get a show rendezvous.0.dial_error)" = null ] || fail "a still names a dial error"
log "ok"
