#!/usr/bin/env bash
# Three nodes on one L2 segment, each configured with the other two: every
# one of the six directions pings, over IPv4 and the key-derived IPv6
# addresses, and each daemon holds a session with both of its peers.
. "$(dirname "$0")/lib.sh"

mesh a b c
for n in a b c; do start_yipd "$n"; done
for n in a b c; do
	for m in a b c; do
		[ "$n" = "$m" ] && continue
		ping_ok "$n" "10.77.0.$(idx_of "$m")" 3 -i 0.05 >/dev/null
		ping_ok "$n" "$(addr_of "$m")" 3 -i 0.05 >/dev/null
		log "$n -> $m: IPv4 and IPv6 ok"
	done
done
for n in a b c; do
	est=$(established "$n")
	[ "$est" -eq 2 ] || fail "$n has $est established sessions, expected 2"
done
# A destination no peer owns is answered at once with ICMP unreachable.
out=$(in_ns a ping -n -c 1 -W 2 10.77.0.99 2>&1 || true)
grep -qi "unreachable" <<<"$out" || fail "no ICMP unreachable for 10.77.0.99: $out"
out=$(in_ns a ping -n -c 1 -W 2 fd00::1234 2>&1 || true)
grep -qi "unreachable" <<<"$out" || fail "no ICMPv6 unreachable for fd00::1234: $out"
log "ok: 6 directions x 2 families; unroutable destination answered with ICMP unreachable"
