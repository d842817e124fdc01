#!/usr/bin/env bash
# mtu=auto (the default) on an underlay of 1400 bytes: yipd must choose
# 1400 - 28 (IPv4 + UDP) - 44 (the largest framing: a repair) = 1328, set it
# on the device, and then full-size packets must cross without the underlay
# fragmenting anything: DF pings of exactly the MTU pass, one byte more is
# refused locally, and a TCP transfer arrives intact while FEC sends repairs
# (loss on the link) and no send fails for size.
. "$(dirname "$0")/lib.sh"

two_peers
for n in a b; do in_ns "$n" ip link set "v$NSP$n" mtu 1400; done
start_yipd a
start_yipd b
wait_ping a 10.77.0.2

for n in a b; do
	mtu=$(in_ns "$n" cat /sys/class/net/yip0/mtu)
	log "$n: yip0 mtu $mtu"
	[ "$mtu" -eq 1328 ] || fail "$n chose mtu $mtu, expected 1328 (1400 - 72)"
done
grep -h "mtu 1328" "$TMP/a.log" >/dev/null || fail "a's log does not name the MTU it chose"

# 1328 - 20 (IP) - 8 (ICMP) = 1300 bytes of ping payload fill the MTU exactly.
in_ns a ping -n -c 3 -i 0.1 -M do -s 1300 10.77.0.2 >/dev/null || fail "a full-size DF ping did not pass"
# Refused by a's own kernel (the send fails for size, naming the MTU), not
# lost on the way: any failed ping would not show that.
out=$(in_ns a ping -n -c 1 -W 1 -M do -s 1301 10.77.0.2 2>&1) &&
	fail "a ping one byte larger than the MTU passed: $out"
grep -qi "message too long, mtu=1328" <<<"$out" ||
	fail "a ping one byte larger than the MTU was not refused locally: $out"

# Loss makes the sender add repairs, the largest datagrams yip sends.
add_loss b 5
in_ns a ping -q -c 200 -i 0.01 -s 1300 10.77.0.2 >/dev/null || true
read -r secs ok < <(tcp_copy a 10.77.0.2 $((20 << 20)))
log "20 MB over TCP at 5 % loss: $secs s, sha256 match: $ok"
[ "$ok" = yes ] || fail "the file arrived corrupted or incomplete"
rep=$(peer_field a repair_sent)
log "a sent $rep repair symbols"
[ "${rep:-0}" -gt 0 ] || fail "no repairs were sent: the largest datagrams went untested"
for n in a b; do
	sf=$(drops "$n" send_failed)
	[ "${sf:-0}" -eq 0 ] || fail "$n: $sf sends failed (too big for the path?)"
done
frag=$(in_ns b nstat -az IpReasmReqds 2>/dev/null | awk '/IpReasmReqds/ { print $2 }')
log "b reassembled ${frag:-0} fragments"
[ "${frag:-0}" -eq 0 ] || fail "the underlay fragmented $frag datagrams"
log "ok"
