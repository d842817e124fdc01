#!/usr/bin/env bash
# bench/compare/diag/tls-outer-cc.sh: what the outer TCP's congestion
# control leaves of a TLS link on a lossy path (docs/transports.md). Needs
# root; uses the netns test library (tests/netns/lib.sh) and yip-linkem.
#
#   tls-outer-cc.sh [--link SPEC] [--runs N]
#
# For each run, twice: a and b through the emulator with SPEC each way
# (default delay=10ms,loss=1%), a dialing b's listen_tls, one inner CUBIC
# iperf3 stream for 6 s. "bbr": as yipd runs (the link asks for BBR).
# "cubic": BBR taken out of the host's allowed list for the run, so the
# unprivileged yipd's request fails and its connection gets the
# namespace's default, CUBIC (the allowed list is put back on exit). Prints
# one line per run: the outer congestion control ss saw, and Mbit/s.
set -u
SPEC="delay=10ms,loss=1%" RUNS=3
while [ $# -gt 0 ]; do
	case $1 in
	--link) SPEC=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	*) echo "usage: $0 [--link SPEC] [--runs N]" >&2; exit 2 ;;
	esac
done
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)

one() { # OUTER: one run in a fresh topology (a subshell: lib.sh's cleanup ends it)
	(
		TEST=tls-outer-cc
		. "$ROOT/tests/netns/lib.sh"
		linked_peers "$SPEC"
		sed -i "s|^endpoint=198.18.0.2:51820|endpoint=tls://198.18.0.2:8443|" "$TMP/a.conf"
		sed -i -e "1a listen_tls=198.18.0.2:8443" -e "/^endpoint=/d" "$TMP/b.conf"
		tune_tcp cubic
		if [ "$1" = cubic ]; then
			for n in a b; do in_ns "$n" sysctl -qw net.ipv4.tcp_congestion_control=cubic; done
		fi
		start_yipd a
		start_yipd b
		wait_ping a 10.77.0.2
		in_ns b iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
		sleep 0.5
		in_ns a iperf3 -c 10.77.0.2 -p 5201 -t 6 -C cubic -J >"$TMP/iperf.json" 2>&1
		cc=$(in_ns a ss -tin 'dport = :8443' | grep -oE '(bbr|cubic|reno) ' | head -1)
		bps=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e6,1))' "$TMP/iperf.json")
		echo "outer ${cc:-?} inner cubic link $SPEC: $bps Mbit/s"
	)
}

allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap 'sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed"' EXIT
for i in $(seq 1 "$RUNS"); do
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed"
	one bbr
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="reno cubic"
	one cubic
done
