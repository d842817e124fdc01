#!/usr/bin/env bash
# linkem_selftest: measures what yip-linkem does to traffic between two
# network namespaces (A - M - B, the emulator in M) and compares it with what
# it was asked to do: zero-impairment forwarding, random loss, delay, reordering
# (and its absence under jitter), burst loss, the stats file and exit codes.
# Needs root. LINKEM=path overrides the binary (default build/yip-linkem).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The topology (A - M - B, veths, offloads off) and the emulator start.
. "$ROOT/tests/lib/topology.sh"
NAME=linkem_selftest

if [ "$(id -u)" -ne 0 ]; then
	echo "$NAME: needs root (network namespaces, veth, AF_PACKET)" >&2
	exit 1
fi
if [ ! -x "$LINKEM" ]; then
	echo "$NAME: $LINKEM not built (run make, or set LINKEM=/path/to/yip-linkem)" >&2
	exit 1
fi
for tool in ip ethtool ping python3; do
	command -v "$tool" >/dev/null || {
		echo "$NAME: $tool not found" >&2
		exit 1
	}
done

topo_names "lk$$" # NS_A, NS_M, NS_B, IF_A, IF_MA, IF_MB, IF_B: for cleanup
PORT=9000
TMP=$(mktemp -d "/tmp/$NAME.XXXXXX")
RX_PID=""
PASS=0
FAILED=0

cleanup() {
	local rc=$?
	trap - EXIT
	for p in $LINKEM_PID $RX_PID; do kill "$p" 2>/dev/null || true; done
	for p in $LINKEM_PID $RX_PID; do wait "$p" 2>/dev/null || true; done
	for n in "$NS_A" "$NS_M" "$NS_B"; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	echo "ok - $*"
	PASS=$((PASS + 1))
}
bad() {
	echo "FAIL - $*"
	FAILED=$((FAILED + 1))
}
# check COND_AWK_EXPR MESSAGE: ok/FAIL by a floating-point condition.
check() {
	if awk "BEGIN { exit !($1) }"; then ok "$2"; else bad "$2"; fi
}
in_ns() {
	local n=$1
	shift
	ip netns exec "$n" "$@"
}

# ---- topology: A ($IF_A) <-> ($IF_MA) M ($IF_MB) <-> ($IF_B) B -----------------
topo_build "lk$$" 10.201.0.1 10.201.0.2 || {
	echo "$NAME: $TOPO_ERR" >&2
	exit 1
}
# No IPv6 chatter (router solicitations, MLD) mixed into the measurements
# (topo_build turns IPv6 off in M; the emulator is not running yet).
for n in "$NS_A" "$NS_B"; do
	in_ns "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
# Static neighbours: no ARP exchange (itself subject to loss) in the counts.
mac_of() { ip -n "$1" -br link show dev "$2" | awk '{ print $3 }'; }
ip -n "$NS_A" neigh replace "$IP_B" lladdr "$(mac_of "$NS_B" "$IF_B")" dev "$IF_A" nud permanent
ip -n "$NS_B" neigh replace "$IP_A" lladdr "$(mac_of "$NS_A" "$IF_A")" dev "$IF_B" nud permanent

# ---- UDP helper: a paced sequence-numbered sender and a counting receiver ----
cat >"$TMP/udp.py" <<'EOF'
import socket, struct, sys, time

def send(dst, port, count, pps):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = b"x" * 56
    start = time.perf_counter()
    for i in range(count):
        ahead = start + i / pps - time.perf_counter()
        if ahead > 0.001:
            time.sleep(ahead)
        s.sendto(struct.pack("!Q", i) + pad, (dst, port))

def recv(port, count, ready, idle):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", port))
    open(ready, "w").close()
    seen = bytearray(count)
    got = dups = late = 0
    top = -1
    s.settimeout(20.0)  # nothing at all: give up
    while True:
        try:
            data = s.recv(2048)
        except socket.timeout:
            break
        s.settimeout(idle)
        if len(data) < 8:
            continue
        seq = struct.unpack("!Q", data[:8])[0]
        if seq >= count:
            continue
        if seen[seq]:
            dups += 1
            continue
        seen[seq] = 1
        got += 1
        if seq < top:
            late += 1  # arrived after a later packet: reordered
        else:
            top = seq
    # Runs of consecutive missing sequence numbers.
    bursts = run = 0
    for i in range(count):
        if not seen[i]:
            run += 1
        elif run:
            bursts += 1
            run = 0
    if run:
        bursts += 1
    lost = count - got
    print("sent=%d got=%d lost=%d loss=%.3f late=%d late_pct=%.3f dups=%d bursts=%d mean_burst=%.3f"
          % (count, got, lost, 100.0 * lost / count, late, 100.0 * late / count, dups, bursts,
             lost / bursts if bursts else 0.0))

if sys.argv[1] == "send":
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
else:
    recv(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
EOF

# ---- helpers ------------------------------------------------------------------
LK_RCS=""
# start_linkem ARGS...: runs the emulator in M, waits until it is ready.
start_linkem() {
	topo_linkem "$TMP/stats" "$TMP/linkem.log" "$@" && return 0
	echo "# yip-linkem $*: $TOPO_ERR"
	sed 's/^/#   /' "$TMP/linkem.log"
	return 1
}
# stop_linkem: SIGTERM, records the exit status.
stop_linkem() {
	[ -n "$LINKEM_PID" ] || return 0
	local rc=0
	kill -TERM "$LINKEM_PID"
	wait "$LINKEM_PID" || rc=$?
	LK_RCS="$LK_RCS $rc"
	LINKEM_PID=""
}
# stat_of DIR KEY: a counter from the stats file.
stat_of() {
	sed -n "s/^$1 .*\b$2=\([0-9]*\).*/\1/p" "$TMP/stats"
}
# val KEY FILE: a key=value from a receiver report.
val() {
	tr ' ' '\n' <"$2" | sed -n "s/^$1=//p"
}
# udp_run COUNT PPS OUT: COUNT packets A -> B at PPS; report in OUT.
udp_run() {
	local count=$1 pps=$2 out=$3
	rm -f "$TMP/ready"
	ip netns exec "$NS_B" python3 "$TMP/udp.py" recv "$PORT" "$count" "$TMP/ready" 0.5 >"$out" &
	RX_PID=$!
	local _
	for _ in $(seq 1 100); do
		[ -e "$TMP/ready" ] && break
		sleep 0.02
	done
	in_ns "$NS_A" python3 "$TMP/udp.py" send "$IP_B" "$PORT" "$count" "$pps"
	wait "$RX_PID" || true
	RX_PID=""
}
# ping_median COUNT INTERVAL: sets PING_GOT (replies) and PING_MED (median
# RTT in ms, empty without replies).
ping_median() {
	in_ns "$NS_A" ping -n -c "$1" -i "$2" -W 2 "$IP_B" >"$TMP/ping.out" 2>&1 || true
	sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' "$TMP/ping.out" | sort -n >"$TMP/rtts"
	PING_GOT=$(wc -l <"$TMP/rtts")
	PING_MED=$(awk '{ a[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' "$TMP/rtts")
}

# ---- 1. zero impairment --------------------------------------------------------
if start_linkem; then
	ping_median 50 0.02
	base=$PING_MED
	if [ "$PING_GOT" -eq 50 ]; then
		ok "zero impairment: ping 50/50 replies, median RTT ${base} ms"
	else
		bad "zero impairment: ping $PING_GOT/50 replies"
		base=""
	fi
	kill -USR1 "$LINKEM_PID"
	sleep 0.2
	rx=$(stat_of a2b rx)
	tx=$(stat_of b2a tx)
	if [ "${rx:-0}" -ge 50 ] && [ "${tx:-0}" -ge 50 ] && [ "$(stat_of a2b lost)" = 0 ]; then
		ok "stats on SIGUSR1: a2b rx=$rx, b2a tx=$tx, nothing lost"
	else
		bad "stats on SIGUSR1: $(tr '\n' ' ' <"$TMP/stats" 2>/dev/null)"
	fi
	stop_linkem
else
	bad "zero impairment: yip-linkem did not start"
	base=""
fi

# ---- 2. random loss ------------------------------------------------------------------
if start_linkem --a2b loss=10% --seed 1; then
	udp_run 10000 20000 "$TMP/loss.out"
	loss=$(val loss "$TMP/loss.out")
	got=$(val got "$TMP/loss.out")
	check "${loss:-100} >= 9 && ${loss:-100} <= 11" \
		"loss=10%: measured loss ${loss:-?}% over 10000 UDP packets (${got:-0} received)"
	kill -USR1 "$LINKEM_PID"
	sleep 0.2
	rx=$(stat_of a2b rx)
	lost=$(stat_of a2b lost)
	missing=$((10000 - ${got:-0}))
	check "${rx:-0} == 10000 && ${lost:-0} - $missing <= 5 && $missing - ${lost:-0} <= 5" \
		"loss=10%: stats file counts a2b rx=${rx:-?} lost=${lost:-?} (receiver missed $missing)"
	stop_linkem
else
	bad "loss=10%: yip-linkem did not start"
fi

# ---- 3. delay --------------------------------------------------------------------------
if [ -z "$base" ]; then
	bad "delay=20ms: no baseline RTT"
elif start_linkem --both delay=20ms; then
	ping_median 50 0.05
	rtt=$PING_MED
	if [ "$PING_GOT" -ge 45 ]; then
		added=$(awk -v a="$rtt" -v b="$base" 'BEGIN { printf "%.3f", a - b }')
		check "$added >= 39.6 && $added <= 40.4" \
			"delay=20ms each way: median RTT ${rtt} ms, ${added} ms above baseline (want 40 +- 0.4)"
	else
		bad "delay=20ms: ping $PING_GOT/50 replies"
	fi
	stop_linkem
else
	bad "delay=20ms: yip-linkem did not start"
fi

# ---- 4. reordering, and none from jitter ----------------------------------------------
if start_linkem --a2b reorder=5% --seed 2; then
	udp_run 4000 10000 "$TMP/reorder.out"
	late=$(val late "$TMP/reorder.out")
	pct=$(val late_pct "$TMP/reorder.out")
	lost=$(val lost "$TMP/reorder.out")
	check "${late:-0} > 0 && ${lost:-1} == 0" \
		"reorder=5%: ${late:-0} of 4000 packets (${pct:-0}%) arrived after a later one, ${lost:-?} lost"
	stop_linkem
else
	bad "reorder=5%: yip-linkem did not start"
fi
if start_linkem --a2b jitter=2ms --seed 3; then
	udp_run 4000 10000 "$TMP/jitter.out"
	late=$(val late "$TMP/jitter.out")
	lost=$(val lost "$TMP/jitter.out")
	check "${late:-1} == 0 && ${lost:-1} == 0" \
		"jitter=2ms: ${late:-?} of 4000 packets reordered, ${lost:-?} lost"
	stop_linkem
else
	bad "jitter=2ms: yip-linkem did not start"
fi

# ---- 5. burst loss -----------------------------------------------------------------------
if start_linkem --a2b loss=5%,burst=4 --seed 4; then
	udp_run 30000 30000 "$TMP/burst.out"
	loss=$(val loss "$TMP/burst.out")
	mb=$(val mean_burst "$TMP/burst.out")
	# Bursty loss varies more than independent loss: over 30000 packets one
	# standard deviation is about 0.3 points.
	check "${loss:-100} >= 3.5 && ${loss:-100} <= 6.5 && ${mb:-0} > 2" \
		"loss=5%,burst=4: measured loss ${loss:-?}% over 30000 packets, mean burst ${mb:-?} packets"
	stop_linkem
else
	bad "loss=5%,burst=4: yip-linkem did not start"
fi

# ---- 6. exit codes -----------------------------------------------------------------------
codes_ok=1
for rc in $LK_RCS; do [ "$rc" -eq 0 ] || codes_ok=0; done
rc=0
in_ns "$NS_M" "$LINKEM" "$IF_MA" "$IF_MB" --a2b loss=often >/dev/null 2>&1 || rc=$?
rc_missing=0
in_ns "$NS_M" "$LINKEM" "$IF_MA" nosuchif >/dev/null 2>&1 || rc_missing=$?
if [ "$codes_ok" -eq 1 ] && [ -n "$LK_RCS" ] && [ "$rc" -eq 2 ] && [ "$rc_missing" -eq 1 ]; then
	ok "exit codes: 0 on SIGTERM (x$(echo "$LK_RCS" | wc -w)), 2 on a bad SPEC, 1 on a missing interface"
else
	bad "exit codes: on SIGTERM:$LK_RCS; bad SPEC: $rc (want 2); missing interface: $rc_missing (want 1)"
fi

echo "$NAME: $PASS passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
