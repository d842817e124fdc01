#!/usr/bin/env bash
# A soak of two yipd built with ASan and UBSan (make debug), for SECS
# seconds (default 1800): the tunnel of tests/netns (two_peers) with 5 %
# of the datagrams to each side dropped at random, a rekey every 10 s, and
# b stopped (SIGTERM) and started again every RESTART seconds (default 120).
# Manual (make soak), not part of make check; needs root.
#
#   tests/soak/soak.sh [SECS [RESTART]]
#
# Traffic, both ways at once (tests/soak/traffic.py in each namespace):
# TCP transfers of random data, 1 to 8 MiB each (40 Mbit/s on average
# each way), the sender's SHA-256
# ahead of the data and checked by the receiver; UDP datagrams of random
# sizes (32 to 1400 bytes, up to 200 a second), each carrying the SHA-256
# of its payload; a ping every 0.2 s. A transfer cut by a restart counts as
# interrupted, not corrupted.
#
# Required: no sanitizer report in any daemon's log and every daemon exits
# 0 when stopped; not one transfer or datagram arrives with a wrong hash;
# transfers complete both ways; a, which is never restarted, rekeyed about
# every 10 s; a's RSS (sampled every 5 s) grew by at most 10 % between the
# end of the warm-up (the first fifth of the run but at least 60 s, or half
# of a run shorter than two minutes) and the end. a runs with the sandbox on (so without LeakSanitizer, which the
# filter cannot allow); b with YIP_SANDBOX=off and LeakSanitizer on, so
# every stop of b is also a leak check. The logs, the RSS samples and the
# summary are copied to OUT (default /tmp/yip-soak) at the end.
SECS=${1:-1800}
RESTART=${2:-120}
OUT=${SOAK_OUT:-/tmp/yip-soak}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export YIPD=${YIPD:-$ROOT/build-asan/yipd} YIPCTL=${YIPCTL:-$ROOT/build-asan/yipctl}
# shellcheck source=tests/netns/lib.sh
. "$ROOT/tests/netns/lib.sh"

# The logs are copied before lib.sh's cleanup removes them; errexit is off
# here so that a failing run still reaches cleanup, which takes the status
# from $?.
soak_exit() {
	local rc=$?
	set +e
	rm -rf "$OUT"
	cp -r "$TMP" "$OUT" 2>/dev/null
	(exit $rc)
	cleanup
}
trap soak_exit EXIT

SAN="halt_on_error=1:abort_on_error=0:print_stacktrace=1"
two_peers
add_loss a 5
add_loss b 5
start_yipd a YIP_REKEY_INTERVAL_MS=10000 "ASAN_OPTIONS=detect_leaks=0:$SAN" "UBSAN_OPTIONS=$SAN"
incarnation=0
# b_start: starts b again, its log in b.N.log (N counts from 1).
b_start() {
	incarnation=$((incarnation + 1))
	start_yipd b YIP_REKEY_INTERVAL_MS=10000 YIP_SANDBOX=off "ASAN_OPTIONS=detect_leaks=1:$SAN" \
		"UBSAN_OPTIONS=$SAN"
}
# b_stop: stops b, keeps its log, and fails unless it exited 0.
b_stop() {
	local rc=0
	kill -TERM "$(pid_of b)"
	wait "$(pid_of b)" || rc=$?
	mv "$TMP/b.log" "$TMP/b.$incarnation.log"
	[ "$rc" -eq 0 ] || fail "yipd b (start $incarnation) exited $rc: $(tail -n 20 "$TMP/b.$incarnation.log")"
}
b_start
wait_ping a 10.77.0.2

for n in a b; do
	peer=$([ "$n" = a ] && echo 10.77.0.2 || echo 10.77.0.1)
	ip netns exec "$(ns "$n")" python3 "$ROOT/tests/soak/traffic.py" "$peer" "$TMP/traffic-$n.json" \
		>"$TMP/traffic-$n.log" 2>&1 &
	PIDS+=($!)
	eval "TRAFFIC_$n=$!"
done
ip netns exec "$(ns a)" ping -n -q -i 0.2 -W 2 10.77.0.2 >"$TMP/ping" 2>&1 &
pinger=$!
PIDS+=("$pinger")

# rss PID: resident set size in KiB.
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
start=$(date +%s)
next_restart=$((start + RESTART))
warm=$((SECS / 5 > 60 ? SECS / 5 : SECS / 2 < 60 ? SECS / 2 : 60))
echo "# seconds rss_a_kib rss_b_kib" >"$TMP/rss"
log "soak: $SECS s, b restarted every $RESTART s, rekey every 10 s, 5 % loss each way"
while :; do
	now=$(date +%s)
	[ $((now - start)) -lt "$SECS" ] || break
	kill -0 "$(pid_of a)" 2>/dev/null || fail "yipd a died"
	kill -0 "$(pid_of b)" 2>/dev/null || fail "yipd b died"
	echo "$((now - start)) $(rss "$(pid_of a)") $(rss "$(pid_of b)")" >>"$TMP/rss"
	if [ "$now" -ge "$next_restart" ]; then
		b_stop
		b_start
		log "restarted b at $((now - start)) s (start $incarnation)"
		next_restart=$((now + RESTART))
	fi
	sleep 5
done

# The traffic stops first (each side writes its counters), then the daemons.
for n in a b; do kill -TERM "$(eval "echo \$TRAFFIC_$n")" 2>/dev/null || true; done
for n in a b; do wait "$(eval "echo \$TRAFFIC_$n")" || fail "traffic in $n failed: $(tail -n 5 "$TMP/traffic-$n.log")"; done
kill -INT "$pinger" 2>/dev/null || true
wait "$pinger" || true
hs=$(peer_field a handshakes)
b_stop
rc=0
kill -TERM "$(pid_of a)"
wait "$(pid_of a)" || rc=$?
[ "$rc" -eq 0 ] || fail "yipd a exited $rc"

reports=$(grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: " "$TMP"/*.log || true)
[ -z "$reports" ] || fail "sanitizer reports in: $reports"

python3 - "$TMP/traffic-a.json" "$TMP/traffic-b.json" "$TMP/rss" "$warm" >"$TMP/summary" <<'PY' ||
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rows = [list(map(int, l.split())) for l in open(sys.argv[3]) if not l.startswith("#")]
warm = int(sys.argv[4])
after = [r for r in rows if r[0] >= warm]
w, e = after[0][1], after[-1][1]
for name, me, other in (("a->b", a, b), ("b->a", b, a)):
    print("%s: TCP %d transfers acknowledged, %d received intact (%.1f MiB), %d corrupted,"
          " %d cut (%d arrived short); UDP %d sent, %d intact, %d corrupted"
          % (name, me["tcp_sent"], other["tcp_ok"], other["tcp_ok_bytes"] / 2**20, other["tcp_bad"],
             me["tcp_cut"], other["tcp_short"], me["udp_sent"], other["udp_ok"], other["udp_bad"]))
print("RSS a: %d KiB at %d s (end of warm-up), %d KiB at %d s (%+.1f %%), max %d KiB; b: max %d KiB"
      % (w, after[0][0], e, after[-1][0], 100 * (e - w) / w, max(r[1] for r in rows),
         max(r[2] for r in rows)))
print("RESULT bad %d ok_ab %d ok_ba %d growth %.1f"
      % (a["tcp_bad"] + b["tcp_bad"] + a["udp_bad"] + b["udp_bad"], b["tcp_ok"], a["tcp_ok"],
         100 * (e - w) / w))
PY
	fail "could not summarise the run"
while read -r line; do log "$line"; done < <(grep -v '^RESULT' "$TMP/summary")
log "ping: $(grep -E 'packets transmitted' "$TMP/ping")"
log "a counted $hs handshakes; b was started $incarnation times; no sanitizer report"
res=$(sed -n 's/^RESULT //p' "$TMP/summary")
get() { awk -v k="$1" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }' <<<"$res"; }
[ "$(get bad)" -eq 0 ] || fail "$(get bad) transfers or datagrams arrived corrupted"
if [ "$(get ok_ab)" -eq 0 ] || [ "$(get ok_ba)" -eq 0 ]; then fail "no transfer completed in one direction"; fi
[ "$hs" -ge $((SECS / 10 / 2)) ] || fail "a counted $hs handshakes in $SECS s: not a rekey every 10 s"
awk -v g="$(get growth)" 'BEGIN { exit !(g <= 10) }' || fail "a's RSS grew by $(get growth) % after the warm-up"
log "ok (logs in $OUT)"
