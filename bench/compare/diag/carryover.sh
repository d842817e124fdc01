#!/usr/bin/env bash
# bench/compare/diag/carryover.sh: what a tunnel carries from one link
# condition into the next. Needs root.
#
#   carryover.sh [--contender NAME] [--from SPEC] [--to SPEC] [--seconds N] [--trials N]
#
# Each trial builds the suite's topology (lib.sh), starts the contender on a
# link with --from (default: clean), pushes 3 s of TCP through it, then
# changes the link to --to (default: delay=10ms,loss=5%) in two ways:
#   keep:  the tunnel stays up while the emulator is restarted with --to
#          (what run.sh did before every cell got its own tunnel);
#   fresh: the tunnel is stopped, the link changed, a new tunnel started.
# Then one iperf3 stream (CUBIC) for --seconds (default 14) with, every
# second, its throughput and, for a contender that peers over TCP (its
# probe function), the peering connection's BBR state from ss: the minimum
# RTT it works with (mrtt), its bandwidth estimate, cwnd and Send-Q.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
CONTENDER=yggdrasil FROM='' TO='delay=10ms,loss=5%' SECS=14 TRIALS=3
while [ $# -gt 0 ]; do
	case "$1" in
	--contender) CONTENDER=$2; shift ;;
	--from) FROM=$2; shift ;;
	--to) TO=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--trials) TRIALS=$2; shift ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "carryover.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "carryover.sh: needs root" >&2; exit 1; }

ROOT=$(cd "$HERE/../.." && pwd)
RUN=$ROOT/build/bench/carryover-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
: >"$RUN/pids"
: >"$RUN/netns"
. "$HERE/lib.sh"
[ -x "$LINKEM_BIN" ] || { echo "carryover.sh: build/yip-linkem is missing (make build)" >&2; exit 1; }
# shellcheck disable=SC2034 # read by lib.sh
LINKEM=$LINKEM_BIN

# The same global settings as run.sh, put back on exit.
saved=()
save_and_set() { saved+=("$1=$(sysctl -n "$1" | tr '\t' ' ')"); sysctl -qw "$1=$2"; }
finish() {
	trap - EXIT INT TERM
	down >/dev/null 2>&1
	topo_down
	for kv in "${saved[@]}"; do sysctl -qw "$kv" || true; done
}
trap finish EXIT
trap 'exit 130' INT TERM
save_and_set net.core.rmem_max 33554432
save_and_set net.core.wmem_max 33554432
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
case " $allowed " in *" cubic "*) ;; *) save_and_set net.ipv4.tcp_allowed_congestion_control "$allowed cubic" ;; esac

# iperf_secs SECONDS OUT: one stream A -> B, with per-second probes in OUT.probe
iperf_secs() {
	spawn "$NS_B" iperf3-server iperf3 -s -1 -p 5201
	wait_listen "$NS_B" t 5201 5
	in_a timeout $(($1 + 20)) iperf3 -c "$PEER" -p 5201 -t "$1" -J >"$2" 2>&1 &
	local ip=$! i
	: >"$2.probe"
	if declare -F probe >/dev/null; then
		for i in $(seq 1 "$1"); do
			sleep 1
			echo "t=$i $(probe 2>/dev/null | tr '\n' ' ')" >>"$2.probe"
		done
	fi
	wait "$ip"
	stop_pids "$LAST_PID"
}

report() { # report OUT LABEL
	"$PY" - "$1" "$2" <<'PY'
import json, re, sys
path, label = sys.argv[1], sys.argv[2]
try:
    j, _ = json.JSONDecoder().raw_decode(open(path).read().lstrip())
    iv = [i["sum"]["bits_per_second"] / 1e6 for i in j["intervals"]]
    tot = j["end"]["sum_received"]["bits_per_second"] / 1e6
except Exception as e:
    print("%s: no iperf3 result (%s)" % (label, e)); sys.exit()
probes = {}
for line in open(path + ".probe"):
    m = re.match(r"t=(\d+) (.*)", line)
    if not m:
        continue
    s = m.group(2)
    g = lambda rx: (re.search(rx, s) or [None, "-"])[1]
    probes[int(m.group(1))] = (g(r"mrtt:([\d.]+)"), g(r"bbr:\(bw:(\d+)bps"), g(r"cwnd:(\d+)"),
                               g(r"ESTAB\s+\d+\s+(\d+)"))
print("%s: %.1f Mbit/s over the whole test" % (label, tot))
print("  s  Mbit/s  | peering TCP: mrtt ms  bw Mbit/s  cwnd  Send-Q bytes")
for i, v in enumerate(iv):
    p = probes.get(i + 1, ("-", "-", "-", "-"))
    bw = "%.0f" % (int(p[1]) / 1e6) if p[1] not in ("-", None) else "-"
    print(" %2d %7.1f  | %12s %10s %5s %12s" % (i + 1, v, p[0], bw, p[2], p[3]))
PY
}

WORK=$RUN
# shellcheck disable=SC2034 # the contender file reads and sets these
DESC=$CONTENDER PEER='' TUN_DEV=''
# shellcheck source=/dev/null
. "$HERE/contenders/$CONTENDER.sh"
available >/dev/null || { echo "carryover.sh: $CONTENDER is not installed" >&2; exit 1; }
echo "contender $CONTENDER, from '${FROM:-clean}' to '$TO', $TRIALS trials, logs in $RUN"
for t in $(seq 1 "$TRIALS"); do
	for how in keep fresh; do
		WORK=$RUN/$t-$how
		mkdir -p "$WORK"
		topo_up || { echo "topology: $FAIL_REASON"; exit 1; }
		set_cc cubic
		link_set "$FROM" "$t" || { echo "link: $FAIL_REASON"; exit 1; }
		up >"$WORK/up.log" 2>&1 || { echo "up: $FAIL_REASON"; exit 1; }
		iperf_secs 3 "$WORK/warm.json"
		if [ "$how" = keep ]; then
			link_set "$TO" $((t + 100)) || { echo "link: $FAIL_REASON"; exit 1; }
			wait_ping "$PEER" 15
		else
			down >/dev/null 2>&1
			link_set "$TO" $((t + 100)) || { echo "link: $FAIL_REASON"; exit 1; }
			up >>"$WORK/up.log" 2>&1 || { echo "up: $FAIL_REASON"; exit 1; }
		fi
		iperf_secs "$SECS" "$WORK/test.json"
		report "$WORK/test.json" "trial $t, $how"
		down >/dev/null 2>&1
		topo_down
	done
done
