#!/usr/bin/env bash
# Three TAP nodes in a full mesh form one Ethernet segment: ARP resolves,
# every leg pings (IPv4, and IPv6 via neighbour discovery), and a broadcast
# from one node reaches each of the other two exactly once.
. "$(dirname "$0")/lib.sh"

mesh a b c
as_tap a b c
for n in a b c; do start_yipd "$n"; done
for n in a b c; do
	for m in a b c; do
		[ "$n" = "$m" ] && continue
		ping_ok "$n" "10.77.0.$(idx_of "$m")" 3 -i 0.05 >/dev/null
		ping_ok "$n" "$(addr_of "$m")" 2 -i 0.05 >/dev/null
	done
done
mac_b=$(in_ns b cat /sys/class/net/yip0/address)
# Read the table whole first: with pipefail, grep -q closing the pipe early
# could fail the check by killing ip with SIGPIPE.
neigh=$(in_ns a ip neigh show dev yip0)
grep -q "10.77.0.2 .*lladdr $mac_b" <<<"$neigh" || fail "a did not learn b's MAC by ARP: $neigh"
log "every leg pings; ARP on a: 10.77.0.2 is at $mac_b"

# One broadcast from a: b and c each count what arrives on port 5600.
LISTENERS=()
for n in b c; do
	in_ns "$n" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5600)); s.settimeout(1.5)
n = 0
try:
    while True:
        s.recv(100); n += 1
except socket.timeout:
    pass
print(n)' >"$TMP/bcast.$n" &
	LISTENERS+=($!)
done
wait_listen b udp 5600
wait_listen c udp 5600
in_ns a python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.sendto(b"hello mesh", ("10.77.0.255", 5600))'
wait "${LISTENERS[@]}"
for n in b c; do
	got=$(cat "$TMP/bcast.$n")
	[ "$got" = 1 ] || fail "$n received the broadcast $got times, expected exactly once"
done
log "ok: broadcast from a reached b and c exactly once each"
