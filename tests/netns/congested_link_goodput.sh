#!/usr/bin/env bash
# A rate-limited path's own queue must not turn yip's loss recovery against
# the transfer. A 100 Mbit/s link with a 1000-frame tail-drop queue and a
# 20 ms RTT (yip-linkem in a middle namespace; nothing else is lost): the
# inner TCP (CUBIC) fills the queue until it overflows, as it does on any
# bottleneck. That loss is congestion; yip must leave it to the inner TCP
# (docs/protocol.md §10.6) instead of resending it and adding redundancy
# into the full queue. Repairing it collapsed a transfer to 27-77 % of the
# link. One stream a -> b must keep at least MIN_SHARE of the link's rate
# (best of two runs, so a stall of this shared machine does not decide it),
# and a must have counted the loss as congestion.
. "$(dirname "$0")/lib.sh"

SECS=${CONGESTED_SECS:-6}
RATE=100
MIN_SHARE=${MIN_SHARE:-0.80}

# stream PORT: one CUBIC stream a -> b for SECS seconds; prints Mbit/s.
stream() {
	in_ns b iperf3 -s -1 -p "$1" >/dev/null 2>&1 &
	local srv=$!
	wait_listen b tcp "$1"
	in_ns a timeout $((SECS + 20)) iperf3 -c 10.77.0.2 -p "$1" -t "$SECS" -C cubic -J \
		>"$TMP/iperf.$1.json" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	python3 -c '
import json, sys
try:
    print("%.1f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))
except Exception:
    print("0")' "$TMP/iperf.$1.json"
}

linked_peers "rate=${RATE}mbit,delay=10ms"
tune_tcp cubic
start_yipd a
start_yipd b
ping_ok a 10.77.0.2 20 -i 0.05 >/dev/null

best=0
for run in 1 2; do
	mbit=$(stream $((5400 + run)))
	log "run $run: $mbit Mbit/s over a $RATE Mbit/s link"
	best=$(awk -v a="$best" -v b="$mbit" 'BEGIN { print (b > a ? b : a) }')
done
log "a: $(recovery a)"
congested=$(peer_field a arq_congested)
windows=$(peer_field a loss_congested)
log "a: $congested NACKed packets left to the inner TCP, $windows loss windows held back"
share=$(awk -v m="$best" -v r="$RATE" 'BEGIN { printf "%.2f", m / r }')
awk -v s="$share" -v m="$MIN_SHARE" 'BEGIN { exit !(s >= m) }' ||
	fail "one stream moved $best Mbit/s, $share of the $RATE Mbit/s link (at least $MIN_SHARE wanted)"
[ "$((congested + windows))" -gt 0 ] ||
	fail "the queue overflowed without a loss counted as congestion"
log "ok"
