#!/usr/bin/env bash
# Reload without dropping sessions (docs/configuration.md, "Reloading"):
# three nodes on a bridge; a starts knowing only b. While a pings b without
# pause, a's file gains peer c (with a prefix beyond the tunnel's subnet)
# and b gets another prefix, and `yipctl reload` applies it: "+1 ~1 -0",
# c answers, the kernel has the new routes, no ping to b is lost, and b's
# session (its handshake time) and counters are not reset. Removing c
# removes its route; a file with an error, or one that changes listen or
# local_private, changes nothing and says why; SIGHUP reloads as well.
# yipd runs sandboxed as nobody: the file and the routes go through its
# privileged half, which keeps CAP_NET_ADMIN and CAP_DAC_READ_SEARCH only.
# drivers: one
. "$(dirname "$0")/lib.sh"

mesh a b c
# a knows only b at start; b and c know everyone.
cp "$TMP/a.conf" "$TMP/a.full"
awk '/^\[peer\]/{n++} n<2' "$TMP/a.full" >"$TMP/a.conf"
grep -q "$(pub_of c)" "$TMP/a.conf" && fail "a's first config lists c"
# c also claims 10.99.0.0/24, routed by a once c is its peer.
sed -i "s|^allowed_ips=10.77.0.1/32|allowed_ips=10.77.0.1/32\nallowed_ips=10.99.1.0/24|" "$TMP/b.conf"
chmod 600 "$TMP"/*.conf
start_yipd a
start_yipd b
start_yipd c
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null

log "the daemon is nobody; its privileged half keeps two capabilities"
# launch_yipd's pid is yipd's own (env and ip netns exec exec it).
dpid=$(pid_of a)
priv=$(pgrep -x yipd-priv -P "$dpid" || true)
[ -n "$priv" ] || fail "no privileged half (yipd-priv) under yipd $dpid"
[ "$(awk '/^Uid:/{print $2}' /proc/"$dpid"/status)" != 0 ] || fail "yipd still runs as root"
capeff=$(awk '/^CapEff:/{print $2}' /proc/"$priv"/status)
[ "$capeff" = 0000000000001004 ] || fail "privileged half has CapEff $capeff (want NET_ADMIN and DAC_READ_SEARCH)"
caps=$(awk '/^CapBnd:/{print $2}' /proc/"$priv"/status)
[ "$caps" = 0000000000001004 ] || fail "privileged half has bounding set $caps"

hs0=$(peer_field a latest_handshake)
rx0=$(peer_field a rx_bytes)

log "ping b without pause while c is added and b's prefixes change"
in_ns a ping -n -q -i 0.05 -c 120 -W 1 10.77.0.2 >"$TMP/ping.txt" 2>&1 &
ping_pid=$!
sleep 1
{
	cat "$TMP/a.full" | awk '/^\[peer\]/{n++} n<3'
} >"$TMP/a.new"
# b: a second prefix; c: its /32 and 10.98.0.0/24.
sed -i "0,/^allowed_ips=10.77.0.2\/32/s||allowed_ips=10.77.0.2/32\nallowed_ips=10.99.1.0/24|" "$TMP/a.new"
sed -i "s|^allowed_ips=10.77.0.3/32|allowed_ips=10.77.0.3/32\nallowed_ips=10.98.0.0/24|" "$TMP/a.new"
cp "$TMP/a.new" "$TMP/a.conf"
out=$(in_ns a env YIP_CTL_DIR="$TMP/ctl-a" "$YIPCTL" reload) || fail "yipctl reload failed: $out"
echo "$out" | sed 's/^/    /'
[ "$(head -n1 <<<"$out")" = "+1 ~1 -0" ] || fail "reload said '$(head -n1 <<<"$out")', not +1 ~1 -0"
grep -q "~ peer .*allowed_ips +10.99.1.0/24" <<<"$out" || fail "no line for b's new prefix"
in_ns a ip route show dev yip0 | grep -q "^10.98.0.0/24" || fail "no kernel route for c's prefix"
in_ns a ip route show dev yip0 | grep -q "^10.99.1.0/24" || fail "no kernel route for b's new prefix"
ping_ok a 10.77.0.3 3 -i 0.2 >/dev/null
wait "$ping_pid" || true
cat "$TMP/ping.txt" | tail -n 2 | sed 's/^/    /'
grep -q "120 packets transmitted, 120 received" "$TMP/ping.txt" ||
	fail "pings to b were lost across the reload: $(grep transmitted "$TMP/ping.txt")"
hs1=$(peer_field a latest_handshake)
rx1=$(peer_field a rx_bytes)
[ "$hs1" = "$hs0" ] || fail "b's session was redone: latest handshake $hs0 -> $hs1"
[ "$rx1" -gt "$rx0" ] || fail "b's counters went from $rx0 to $rx1"

log "a file with an error changes nothing and says where"
cp "$TMP/a.conf" "$TMP/a.good"
printf 'mtu=banana\n' | cat - "$TMP/a.good" >"$TMP/a.conf"
sed -i '/^\[peer\]/,$!b' "$TMP/a.conf"
if out=$(in_ns a env YIP_CTL_DIR="$TMP/ctl-a" "$YIPCTL" reload 2>&1); then
	fail "a bad file reloaded: $out"
fi
echo "    $out"
grep -q "a.conf:1: .*mtu" <<<"$out" || fail "the error does not name the line: $out"
grep -q "nothing was applied" <<<"$out" || fail "the error does not say nothing changed"

log "changing listen or local_private is refused by name"
sed "s|^listen=198.18.0.1:51820|listen=198.18.0.1:51821|" "$TMP/a.good" >"$TMP/a.conf"
out=$(in_ns a env YIP_CTL_DIR="$TMP/ctl-a" "$YIPCTL" reload 2>&1) && fail "a listen change reloaded: $out"
echo "    $out"
grep -q "refused: listen cannot change" <<<"$out" || fail "listen not named: $out"
gen_key other >/dev/null
sed "s|^local_private=.*|local_private=$(priv_of other)|" "$TMP/a.good" >"$TMP/a.conf"
out=$(in_ns a env YIP_CTL_DIR="$TMP/ctl-a" "$YIPCTL" reload 2>&1) && fail "a key change reloaded: $out"
grep -q "refused: local_private cannot change" <<<"$out" || fail "local_private not named: $out"
[ "$(established a)" = 2 ] || fail "a refused reload touched the sessions"
ping_ok a 10.77.0.3 2 -i 0.2 >/dev/null

log "removing c removes its route; SIGHUP reloads too"
awk '/^\[peer\]/{n++} n<2' "$TMP/a.good" >"$TMP/a.conf"
kill -HUP "$dpid"
poll 5 'grep -q "reload: +0 ~0 -1" "$TMP/a.log"' ||
	fail "SIGHUP did not reload: $(grep -E "reload|SIGHUP" "$TMP/a.log" | tail -n 3)"
in_ns a ip route show dev yip0 | grep -q "^10.98.0.0/24" && fail "c's route is still there"
in_ns a ip route show dev yip0 | grep -q "^10.99.1.0/24" || fail "b's route went with c's"
[ "$(yipctl_of a show --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["peers"]))')" = 1 ] ||
	fail "a still lists c"
in_ns a ping -n -q -c 2 -W 1 10.77.0.3 >/dev/null 2>&1 && fail "c still reachable after its removal"
ping_ok a 10.77.0.2 3 -i 0.2 >/dev/null
log "ok"
