#!/usr/bin/env bash
# On a clean link, loss recovery must cost next to nothing: of the bytes
# yipd puts on the wire for a 50 MB TCP transfer (both directions, every
# datagram), repair symbols are at most 1 %, and the total is close to what
# fec=off costs. (The total also counts the inner TCP's retransmissions,
# which vary from run to run by a few percent, so its bound is looser.)
. "$(dirname "$0")/lib.sh"

wire_bytes() { peer_field "$1" wire_bytes; }
repair_bytes() { peer_field "$1" repair_bytes; }

# run_transfer FEC: prints the wire bytes both daemons spent on 50 MB, and
# how many of them were repair symbols.
run_transfer() {
	local fec=$1 a0 b0 a1 b1 ra0 rb0 ra1 rb1
	sed -i "/^fec=/d; 1a fec=$fec" "$TMP/a.conf" "$TMP/b.conf"
	start_yipd a
	start_yipd b
	wait_ping a 10.77.0.2
	in_ns b iperf3 -s -1 -p 5301 >/dev/null 2>&1 &
	wait_listen b tcp 5301
	in_ns a iperf3 -c 10.77.0.2 -p 5301 -n 5M >/dev/null # let the controller settle
	in_ns b iperf3 -s -1 -p 5302 >/dev/null 2>&1 &
	wait_listen b tcp 5302
	a0=$(wire_bytes a); b0=$(wire_bytes b)
	ra0=$(repair_bytes a); rb0=$(repair_bytes b)
	in_ns a iperf3 -c 10.77.0.2 -p 5302 -n 50M >/dev/null
	sleep 0.3
	a1=$(wire_bytes a); b1=$(wire_bytes b)
	ra1=$(repair_bytes a); rb1=$(repair_bytes b)
	kill "$(pid_of a)" "$(pid_of b)"
	wait "$(pid_of a)" "$(pid_of b)" 2>/dev/null || true
	# The kernel removes a TUN device after its last user exits; the next
	# daemon must not find the old one half torn down.
	for n in a b; do
		poll 5 '! in_ns "$n" ip link show yip0 >/dev/null 2>&1' || true
	done
	echo $(( a1 - a0 + b1 - b0 )) $(( ra1 - ra0 + rb1 - rb0 ))
}

two_peers
read -r on rep < <(run_transfer on)
read -r off _ < <(run_transfer off)
ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
share=$(awk -v r="$rep" -v a="$on" 'BEGIN { printf "%.4f", r / a }')
log "50 MB over TCP: $on wire bytes with FEC on ($rep of them repairs: $share), $off with fec=off (ratio $ratio)"
awk -v s="$share" 'BEGIN { exit !(s <= 0.01) }' || fail "repairs were $share of the wire bytes on a clean link"
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.06) }' || fail "FEC costs $ratio x the bytes of fec=off on a clean link"
log "ok"
