#!/usr/bin/env bash
# Loss must not cost a WAN transfer most of its speed, and yip must not make
# a clean WAN path lossy. A 20 ms RTT path (yip-linkem in a middle
# namespace, delay only; offloads off on every veth end, UDP segmentation
# included, so everything below applies to wire-sized datagrams); random
# loss dropped per datagram by nftables (`numgen random`) at both hosts'
# ingress, so both directions lose. One TCP stream a -> b through one
# tunnel that stays up while only the loss changes:
#   - inner CUBIC at 1 % and at 5 % loss keeps at least MIN_RATIO_1 and
#     MIN_RATIO_5 of the clean goodput;
#   - inner BBR on the clean path retransmits less than MAX_BBR_RETX of its
#     segments, and yip's receive-side AQM drops few of them.
# Each CUBIC condition runs three times, alternating, and the best run
# counts, so that a stall of this shared 2-core machine's CPU does not
# decide it.
# The thresholds are below what the code measures here (docs/benchmarks/wan
# has the numbers and the issue's 80 % target): they catch regressions.
. "$(dirname "$0")/lib.sh"

SECS=${WAN_SECS:-4}
MIN_RATIO_1=${MIN_RATIO_1:-0.40}
MIN_RATIO_5=${MIN_RATIO_5:-0.50}
MAX_BBR_RETX=${MAX_BBR_RETX:-0.03}

# loss PERCENT: PERCENT % random loss at a's and b's ingress (0: none).
loss() {
	del_loss a
	del_loss b
	[ "$1" -eq 0 ] && return 0
	add_loss a "$1"
	add_loss b "$1"
}

# stream CC PORT: one CC stream a -> b for SECS seconds; prints
# "Mbit/s retransmits segments" (segments: bytes sent / the inner MSS).
stream() {
	in_ns b iperf3 -s -1 -p "$2" >/dev/null 2>&1 &
	local srv=$!
	wait_listen b tcp "$2"
	in_ns a timeout $((SECS + 20)) iperf3 -c 10.77.0.2 -p "$2" -t "$SECS" -C "$1" -J \
		>"$TMP/iperf.$2.json" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	python3 -c '
import json, sys
try:
    e = json.load(open(sys.argv[1]))["end"]
    print("%.1f %d %d" % (e["sum_received"]["bits_per_second"] / 1e6,
                          e["sum_sent"].get("retransmits", 0), e["sum_sent"]["bytes"] // 1376))
except Exception:
    print("0 0 0")' "$TMP/iperf.$2.json"
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }

linked_peers "delay=10ms"
tune_tcp cubic
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 20 -i 0.05 >/dev/null

clean=0 l1=0 l5=0 port=5310
for round in 1 2 3; do
	for pct in 0 1 5; do
		loss "$pct"
		# As on any path in use: the loss reports teach the sender what
		# the link does before the transfer starts.
		in_ns a ping -q -c 50 -i 0.01 10.77.0.2 >/dev/null || true
		read -r mbit _ _ < <(stream cubic $port)
		port=$((port + 1))
		log "round $round: CUBIC, $pct % loss: $mbit Mbit/s"
		case $pct in
		0) clean=$(max "$clean" "$mbit") ;;
		1) l1=$(max "$l1" "$mbit") ;;
		5) l5=$(max "$l5" "$mbit") ;;
		esac
	done
done
dropped=$(loss_dropped a)
log "b: $(recovery b)"
log "a: $(recovery a)"
[ "${dropped:-0}" -gt 0 ] || fail "nftables dropped nothing at a's ingress: the loss was not applied"

# BBR on the clean path: the underlay drops nothing, so every inner
# retransmit is a loss yip made (or a spurious one it caused).
loss 0
aqm0=$(($(drops a aqm) + $(drops b aqm)))
read -r bbr retx segs < <(stream bbr $port)
aqm=$(($(drops a aqm) + $(drops b aqm) - aqm0))
log "BBR, clean: $bbr Mbit/s, $retx retransmits of $segs segments, $aqm AQM drops"

awk -v c="$clean" 'BEGIN { exit !(c > 0) }' || fail "no goodput on the clean path"
r1=$(awk -v c="$clean" -v l="$l1" 'BEGIN { printf "%.2f", l / c }')
r5=$(awk -v c="$clean" -v l="$l5" 'BEGIN { printf "%.2f", l / c }')
log "best of three: clean $clean, 1 % $l1 ($r1 of clean), 5 % $l5 ($r5 of clean) Mbit/s"
awk -v r="$r1" -v m="$MIN_RATIO_1" 'BEGIN { exit !(r >= m) }' ||
	fail "at 20 ms RTT and 1 % loss yip moved $r1 of its clean goodput (at least $MIN_RATIO_1 wanted)"
awk -v r="$r5" -v m="$MIN_RATIO_5" 'BEGIN { exit !(r >= m) }' ||
	fail "at 20 ms RTT and 5 % loss yip moved $r5 of its clean goodput (at least $MIN_RATIO_5 wanted)"
[ "$segs" -gt 1000 ] || fail "the BBR stream moved only $segs segments"
awk -v r="$retx" -v s="$segs" -v m="$MAX_BBR_RETX" 'BEGIN { exit !(r <= s * m) }' ||
	fail "inner BBR on a clean path retransmitted $retx of $segs segments (at most $MAX_BBR_RETX wanted)"
awk -v a="$aqm" -v s="$segs" -v m="$MAX_BBR_RETX" 'BEGIN { exit !(a <= s * m) }' ||
	fail "yip's AQM dropped $aqm of $segs segments of inner BBR on a clean path"
log "ok"
