#!/usr/bin/env bash
# On a clean link, loss recovery must cost next to nothing: the bytes yipd
# puts on the wire for a 50 MB TCP transfer (both directions, every datagram:
# data, repairs, reports) are within 3 % of what fec=off costs.
. "$(dirname "$0")/lib.sh"

wire_bytes() { peer_field "$1" wire_bytes; }

# run_transfer FEC: prints the wire bytes both daemons spent on 50 MB.
run_transfer() {
	local fec=$1 a0 b0 a1 b1
	sed -i "/^fec=/d; 1a fec=$fec" "$TMP/a.conf" "$TMP/b.conf"
	start_yipd a
	start_yipd b
	wait_ping a 10.77.0.2
	in_ns b iperf3 -s -1 -p 5301 >/dev/null 2>&1 &
	sleep 0.3
	in_ns a iperf3 -c 10.77.0.2 -p 5301 -n 5M >/dev/null # let the controller settle
	in_ns b iperf3 -s -1 -p 5302 >/dev/null 2>&1 &
	sleep 0.3
	a0=$(wire_bytes a); b0=$(wire_bytes b)
	in_ns a iperf3 -c 10.77.0.2 -p 5302 -n 50M >/dev/null
	sleep 0.3
	a1=$(wire_bytes a); b1=$(wire_bytes b)
	kill "$(pid_of a)" "$(pid_of b)"
	wait "$(pid_of a)" "$(pid_of b)" 2>/dev/null || true
	# The kernel removes a TUN device after its last user exits; the next
	# daemon must not find the old one half torn down.
	for n in a b; do
		for _ in $(seq 1 50); do in_ns "$n" ip link show yip0 >/dev/null 2>&1 || break; sleep 0.1; done
	done
	echo $(( a1 - a0 + b1 - b0 ))
}

two_peers
on=$(run_transfer on)
off=$(run_transfer off)
ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
log "50 MB over TCP: $on wire bytes with FEC on, $off with fec=off (ratio $ratio)"
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.03) }' || fail "FEC costs $ratio x the bytes of fec=off on a clean link"
log "ok"
