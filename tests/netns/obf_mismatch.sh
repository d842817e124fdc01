#!/usr/bin/env bash
# drivers: one (control plane: what it checks does not depend on the I/O driver)
# Two nodes with different obf_psk: to each, the other's datagrams are
# noise, dropped (counted as obf) and never answered, so no session forms
# and no packet crosses. The initiator must say why, in its log and in
# yipctl show (text and --json), within a few seconds. Then the same with
# obf_psk on a only: b, without a key, drops a's datagrams as whatever
# their first byte makes of them, and its yipctl show names obf_psk too.
. "$(dirname "$0")/lib.sh"

two_peers
sed -i "/^\[peer\]/i obf_psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$TMP/a.conf"
sed -i "/^\[peer\]/i obf_psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$TMP/b.conf"
start_yipd a
start_yipd b

# pings_fail: both try, pings each way for 6 s (the hint comes after 5 s
# unanswered); neither gets through.
pings_fail() {
	in_ns a ping -n -q -i 0.2 -c 30 -W 1 10.77.0.2 >"$TMP/ping-a.out" 2>&1 &
	local pa pb
	pa=$!
	in_ns b ping -n -q -i 0.2 -c 30 -W 1 10.77.0.1 >"$TMP/ping-b.out" 2>&1 &
	pb=$!
	wait "$pa" "$pb" || true
	grep -q " 100% packet loss" "$TMP/ping-a.out" || fail "a reached b: $(tail -n 2 "$TMP/ping-a.out")"
	grep -q " 100% packet loss" "$TMP/ping-b.out" || fail "b reached a: $(tail -n 2 "$TMP/ping-b.out")"
}
pings_fail

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
log "different keys: no traffic, and both sides say why"

# ---- obf_psk on a only ----
kill "$(pid_of a)" "$(pid_of b)"
wait "$(pid_of a)" "$(pid_of b)" 2>/dev/null || true
sed -i '/^obf_psk=/d' "$TMP/b.conf"
start_yipd a
start_yipd b
pings_fail
for n in a b; do
	[ "$(established "$n")" -eq 0 ] || fail "$n has a session"
	[ "$(peer_field "$n" rx_packets)" -eq 0 ] || fail "$n received packets"
done
[ "$(drops a obf)" -gt 0 ] || fail "a counted no obf drops for b's plain datagrams"
b_drops=$(yipctl_of b show --json | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["drops"].values()))')
[ "$b_drops" -gt 0 ] || fail "b counted no drops for a's obfuscated datagrams"
grep -q "no answer from direct 198.18.0.2:51820 for [0-9]* s (is obf_psk the same on both sides?)" "$TMP/a.log" ||
	fail "a did not log why: $(grep -i answer "$TMP/a.log" | tail -n 2)"
yipctl_of a show | grep -q "handshake: no answer for [0-9]* s (is obf_psk the same on both sides?)" ||
	fail "yipctl show on a does not say why: $(yipctl_of a show)"
yipctl_of b show | grep -q "handshake: no answer for [0-9]* s (.*is obf_psk set on both sides or on neither?)" ||
	fail "yipctl show on b does not mention obf_psk: $(yipctl_of b show)"
log "a with obf_psk, b without: obf drops at a $(drops a obf), drops at b $b_drops; b: $(yipctl_of b show | grep -o 'handshake: no answer.*')"
log "ok: no traffic across different or missing keys, and the nodes say why"
