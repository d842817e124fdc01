#!/usr/bin/env bash
# NAT rebinding under a TCP transfer. a sits behind a symmetric NAT, b behind
# a full cone; they meet through a yip-rendezvous and talk directly. While a
# paced TCP transfer runs from a to b, first a's NAT forgets every mapping
# (natlab_flush: conntrack flushed, as a NAT reboot does; a's next datagram
# leaves from a new random port, which b must follow), then b's does (b's
# mapping and the full cone's map are gone until b sends again: its idle
# probes of the current path must open them). The transfer must complete
# byte-exact, and b must have moved to a's new address.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10
BYTES=$((24 << 20)) RATE=$((6 << 20)) # 4 s of transfer without disturbance

ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_site sym symmetric 203.0.113.21 10.0.1.1/24
ny_build natlab_site full full 203.0.113.22 10.0.2.1/24
ny_build natlab_host sym a
ny_build natlab_host full b

ny_rdv_start rdv "$S:7000"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_conf a rdv b
ny_conf b rdv a
start_yipd a
start_yipd b
wait_ping a 10.77.0.2
ny_wait_direct a b
before=$(ny_peer b a path)
roams0=$(ny_peer b a roams)
log "direct: a -> $(ny_peer a b path), b -> $before"

log "a paced TCP transfer of $((BYTES >> 20)) MiB from a to b; a's NAT flushed after a quarter, b's after half"
ny_tcp_copy a b 10.77.0.2 "$BYTES" "$RATE" >"$TMP/copy.result" &
COPY=$!
# received BYTES: waits (up to 20 s) until b has received BYTES.
received() {
	local bytes=$1
	poll 20 '[ "$(stat -c %s "$TMP/copy.dst" 2>/dev/null || echo 0)" -ge "$bytes" ]' ||
		fail "b received only $(stat -c %s "$TMP/copy.dst" 2>/dev/null || echo 0) bytes of the transfer"
}
received $((BYTES / 4))
flows=$(natlab_exec sym conntrack -L -p udp 2>/dev/null | wc -l)
ny_build natlab_flush sym
log "flushed a's NAT at $(($(stat -c %s "$TMP/copy.dst") >> 20)) MiB ($flows UDP flows forgotten)"
received $((BYTES / 2))
flows=$(natlab_exec full conntrack -L -p udp 2>/dev/null | wc -l)
ny_build natlab_flush full
log "flushed b's NAT at $(($(stat -c %s "$TMP/copy.dst") >> 20)) MiB ($flows UDP flows forgotten)"
wait "$COPY" || true
read -r secs ok <"$TMP/copy.result" || fail "the transfer printed no result"
[ "$ok" = yes ] || fail "the transfer did not arrive byte-exact (after $secs s)"
after=$(ny_peer b a path)
[ "$after" != "$before" ] && [ "$(ny_peer b a roams)" -gt "$roams0" ] ||
	fail "b did not follow a's new mapping: path $after (was $before), roams $(ny_peer b a roams)"
log "the transfer arrived byte-exact in $secs s; b follows a at $after (was $before)"
ping_ok a 10.77.0.2 10 -i 0.05 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.05 >/dev/null
[ "$(ny_kind a b)/$(ny_kind b a)" = direct/direct ] ||
	fail "not direct after the flushes: a: $(ny_peer a b path), b: $(ny_peer b a path)"
log "ok"
