#!/usr/bin/env bash
# drivers: one (control plane: the choice of path, relay to direct)
# From the relay to a direct path without losing a packet. Two sites behind
# port-restricted NATs meet through a yip-rendezvous with UDP between the
# sites blocked at one router (natlab_block), so they can only talk through
# the server's relay. With a ping running every 100 ms, the block is lifted:
# both ends must be on the direct path within 10 s, every echo of the run
# (until 2 s after the switch) must be answered, and the relay must carry
# none of the traffic afterwards.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/natyip.sh"

S=203.0.113.10 UPGRADE_WITHIN=10

ny_lab
ny_build natlab_public rdv "$S"
ny_build natlab_site sitea port 203.0.113.21 10.0.1.1/24
ny_build natlab_site siteb port 203.0.113.22 10.0.2.1/24
ny_build natlab_host sitea a
ny_build natlab_host siteb b
ny_build natlab_block sitea siteb

ny_rdv_start rdv "$S:7000"
ny_node a 10.77.0.1
ny_node b 10.77.0.2
ny_conf a rdv b
ny_conf b rdv a
start_yipd a
start_yipd b

log "UDP between the sites blocked: a and b meet through the relay"
wait_ping a 10.77.0.2
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
for n in a:b b:a; do
	[ "$(ny_kind "${n%:*}" "${n#*:}")" = relayed ] ||
		fail "${n%:*}'s path to ${n#*:} is '$(ny_peer "${n%:*}" "${n#*:}" path)', not relayed"
done
blocked=$(natlab_block_drops sitea)
[ "$blocked" -gt 0 ] || fail "the block at sitea dropped nothing: the sites were never cut"
log "a's path: $(ny_peer a b path) ($(ny_peer a b relayed_why)); $blocked datagrams blocked"

# Keep the relay a few seconds first, so discovery is past its first,
# fastest rounds when the block goes.
log "ping every 100 ms; the block goes 3 s in"
# Not through in_ns: $! must be ping itself, which SIGINT stops with a summary.
ip netns exec "$(ns a)" ping -n -i 0.1 -W 2 10.77.0.2 >"$TMP/ping.out" 2>&1 &
PINGER=$!
PIDS+=("$PINGER")
sleep 3
relay0=$(rdv_node rdv a relay_in_dgrams)
ny_build natlab_unblock sitea siteb
T0=$EPOCHREALTIME
poll_since "$T0" "$UPGRADE_WITHIN" '[ "$(ny_kind a b)" = direct ] && [ "$(ny_kind b a)" = direct ]' 0.2 ||
	fail "still not direct $UPGRADE_WITHIN s after the block went: a: $(ny_peer a b path), b: $(ny_peer b a path)"
direct_at=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
log "direct on both ends $direct_at s after the block went: a: $(ny_peer a b path), b: $(ny_peer b a path)"
# 2 s more on the direct path, then the run ends.
sleep 2
kill -INT "$PINGER"
wait "$PINGER" 2>/dev/null || true
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$TMP/ping.out")
# SIGINT stops ping at once: the echo sent last may still be on its way, so
# every one before it must have been answered.
answered=$(grep 'bytes from' "$TMP/ping.out" | grep -o 'icmp_seq=[0-9]*' | sort -u |
	awk -F= -v n="${sent:-0}" '$2 < n' | wc -l || true)
[ "${sent:-0}" -ge 50 ] && [ "$answered" -eq $((sent - 1)) ] ||
	fail "echoes lost across the switch: $answered of the first $((${sent:-0} - 1)) answered: $(grep transmitted "$TMP/ping.out")"
log "$sent echoes, 100 ms apart, across the switch: all answered ($(sed -n 's/^rtt.* = //p' "$TMP/ping.out"))"

# Now the relay carries nothing: 50 more echoes leave a's relay counter alone.
relay1=$(rdv_node rdv a relay_in_dgrams)
ping_ok a 10.77.0.2 50 -i 0.02 >/dev/null
relay2=$(rdv_node rdv a relay_in_dgrams)
[ $((relay2 - relay1)) -le 2 ] || fail "a still sent $((relay2 - relay1)) datagrams through the relay"
log "a sent $((relay1 - relay0)) datagrams through the relay during the switch, $((relay2 - relay1)) for 50 echoes after it"
log "ok"
