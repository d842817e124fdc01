#!/usr/bin/env bash
# Two nodes with different obf_psk: to each, the other's datagrams are
# noise, dropped (counted as obf) and never answered, so no session forms
# and no packet crosses. The initiator must say why, in its log and in
# yipctl show (text and --json), within a few seconds.
. "$(dirname "$0")/lib.sh"

two_peers
sed -i "/^\[peer\]/i obf_psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$TMP/a.conf"
sed -i "/^\[peer\]/i obf_psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$TMP/b.conf"
start_yipd a
start_yipd b

# Both try: pings each way for 6 s (the hint comes after 5 s unanswered).
in_ns a ping -n -q -i 0.2 -c 30 -W 1 10.77.0.2 >"$TMP/ping-a.out" 2>&1 &
pa=$!
in_ns b ping -n -q -i 0.2 -c 30 -W 1 10.77.0.1 >"$TMP/ping-b.out" 2>&1 &
pb=$!
wait "$pa" "$pb" || true
grep -q " 100% packet loss" "$TMP/ping-a.out" || fail "a reached b: $(tail -n 2 "$TMP/ping-a.out")"
grep -q " 100% packet loss" "$TMP/ping-b.out" || fail "b reached a: $(tail -n 2 "$TMP/ping-b.out")"

for n in a b; do
	[ "$(established "$n")" -eq 0 ] || fail "$n has a session"
	[ "$(peer_field "$n" rx_packets)" -eq 0 ] || fail "$n received packets"
	[ "$(drops "$n" obf)" -gt 0 ] || fail "$n counted no obf drops"
	[ "$(drops "$n" bad_mac1)" -eq 0 ] && [ "$(drops "$n" handshake_failed)" -eq 0 ] ||
		fail "$n's handshake code saw the other's datagrams"
	grep -q "no answer from direct 198.18.0.[12]:51820 for [0-9]* s (is obf_psk the same on both sides?)" "$TMP/$n.log" ||
		fail "$n did not log why: $(grep -i answer "$TMP/$n.log" | tail -n 2)"
	yipctl_of "$n" show | grep -q "handshake: no answer for [0-9]* s (is obf_psk the same on both sides?)" ||
		fail "yipctl show on $n does not say why: $(yipctl_of "$n" show)"
	[ "$(peer_field "$n" handshake_hint)" = "is obf_psk the same on both sides?" ] ||
		fail "yipctl show --json on $n: handshake_hint is $(peer_field "$n" handshake_hint)"
	log "$n: obf drops $(drops "$n" obf); log: $(grep -o 'no answer from .*' "$TMP/$n.log" | head -n 1)"
done
log "ok: no traffic across different keys, and both sides say why"
