#!/usr/bin/env bash
# One run for bench/cpb/cpu.sh; prints "BYTES SECONDS CPU_SECONDS".
. "$(dirname "$0")/../../tests/netns/lib.sh"

linked_peers ""
. "$(dirname "$0")/lib.sh"
add_config_lines
tune_tcp cubic
start_yipd a
start_yipd b
wait_ping a 10.77.0.2
in_ns b iperf3 -s -D -1 >/dev/null
for _ in $(seq 1 50); do # a loaded machine may take a while to start it
	in_ns b ss -Hlnt 'sport = :5201' | grep -q . && break
	sleep 0.1
done
tick=$(getconf CLK_TCK)
cpu() { awk '{ s += $14 + $15 } END { print s }' "/proc/$(pid_of a)/stat" "/proc/$(pid_of b)/stat"; }
c0=$(cpu)
t0=$(date +%s.%N)
bytes=$((GB * 1000000000))
in_ns a iperf3 -c 10.77.0.2 -n "$bytes" -C cubic >"$TMP/iperf3.out" 2>&1 ||
	fail "iperf3: $(tail -n 3 "$TMP/iperf3.out")"
t1=$(date +%s.%N)
c1=$(cpu)
awk -v b="$bytes" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v hz="$tick" \
	'BEGIN { printf "%d %.3f %.3f\n", b, t1 - t0, (c1 - c0) / hz }'
