#!/usr/bin/env bash
# bench/compare/diag/recovery.sh: one iperf3 stream through yip on one link
# condition, with yip's loss-recovery counters and the inner TCP's own
# counters for every run, to find what limits a transfer. Needs root.
#
#   recovery.sh [--spec SPEC] [--cc cubic|bbr] [--seconds N] [--reps N]
#               [--hosts P] [--train P] [--conf LINE]... [--streams N] [--pings N]
#               [--pcap SECONDS] [--label TEXT]
#
# --spec: yip-linkem's SPEC for both directions (default delay=10ms,loss=5%;
#   '' is a clean link). --hosts P: P % random loss by nftables at A's and
#   B's ingress (lib.sh host_impair) instead of, or besides, SPEC's;
#   --train P: whole-train loss at their egress. --conf: an interface line
#   added to both yipd configurations (repeatable). Every run builds the
#   suite's topology (bench/compare/lib.sh), starts yip fresh, sends --pings
#   pings at 10 ms (default 100, as run.sh does before its TCP tests), and
#   prints one
#   line: goodput, the inner TCP's segments and retransmissions (nstat in A),
#   the emulator's loss, and A's (sender's) and B's (receiver's) counters
#   from yipctl show/stats --json, whose full replies stay in the run
#   directory (build/bench/recovery-DATE/). --pcap N: captures the inner
#   stream at A's and B's tunnel devices for the first N seconds and prints
#   what yip did to its segments (inner_delay.py: delay, reordering).
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SPEC='delay=10ms,loss=5%' PINGS=100 PCAP=0 dumps='' CC=cubic SECS=8 REPS=3 HLOSS='' TRAIN='' LABEL='' STREAMS=1
CONF=()
while [ $# -gt 0 ]; do
	case "$1" in
	--spec) SPEC=$2; shift ;;
	--cc) CC=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--hosts) HLOSS=$2; shift ;;
	--train) TRAIN=$2; shift ;;
	--conf) CONF+=("$2"); shift ;;
	--streams) STREAMS=$2; shift ;;
	--label) LABEL=$2; shift ;;
	--pings) PINGS=$2; shift ;;
	--pcap) PCAP=$2; shift ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "recovery.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "recovery.sh: needs root" >&2; exit 1; }

ROOT=$(cd "$HERE/../.." && pwd)
RUN=$ROOT/build/bench/recovery-$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$RUN"
: >"$RUN/pids"
: >"$RUN/netns"
# shellcheck source=bench/compare/lib.sh
. "$HERE/lib.sh"
[ -x "$LINKEM_BIN" ] || { echo "recovery.sh: build/yip-linkem is missing (make build)" >&2; exit 1; }
# shellcheck disable=SC2034 # read by lib.sh
LINKEM=$LINKEM_BIN
# The congestion control is set on iperf3's socket (-C): a privileged socket
# may use any available one, whatever the allowed list of the host says.
YIPCTL=$ROOT/build/yipctl
WORK=$RUN
# shellcheck disable=SC1091
. "$HERE/contenders/yip.sh"
if [ ${#CONF[@]} -gt 0 ]; then
	YIP_EXTRA_CONF=$(printf '%s\\n' "${CONF[@]}")
	YIP_EXTRA_CONF=${YIP_EXTRA_CONF%\\n}
fi

finish() {
	trap - EXIT INT TERM
	down >/dev/null 2>&1
	topo_down
}
trap finish EXIT
trap 'exit 130' INT TERM

# Each daemon its own control socket directory (both are called yip0).
daemon() {
	local n=$1 name=$2
	shift 2
	mkdir -p "$RUN/ctl-$name"
	spawn "$n" "$name" env "YIP_CTL_DIR=$RUN/ctl-$name" "$@"
	DAEMON_PIDS+=("$LAST_PID")
	DAEMON_NAMES+=("$name")
}
ctl() { YIP_CTL_DIR="$RUN/ctl-yipd-$1" "$YIPCTL" "${@:2}"; }
# The sender's TCP counters: segments, retransmissions, recovery episodes
# (each one a window reduction unless undone) and undos.
NSTAT_KEYS="TcpOutSegs TcpRetransSegs TcpExtTCPSackRecovery TcpExtTCPFullUndo TcpExtTCPPartialUndo
TcpExtTCPDSACKUndo TcpExtTCPLossUndo TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtTCPSACKReorder
TcpExtTCPTSReorder TcpExtTCPDSACKRecv TcpExtTCPSpuriousRtxHostQueues"
# shellcheck disable=SC2086 # a list of names
nstat_a() { in_a nstat -az $NSTAT_KEYS 2>/dev/null | awk '/^Tcp/ {printf "%s=%s ", $1, $2}'; }

echo "# spec='$SPEC' cc=$CC hosts=${HLOSS:-0} train=${TRAIN:-0} conf='${CONF[*]:-}' ${SECS}s x$REPS $LABEL (logs: $RUN)"
for rep in $(seq 1 "$REPS"); do
	F=$RUN/r$rep
	topo_up || { echo "topology: $FAIL_REASON"; exit 1; }
	set_cc "$CC" 2>/dev/null || true
	link_set "$SPEC" "$rep" || { echo "link: $FAIL_REASON"; exit 1; }
	host_impair "$HLOSS" "$TRAIN" || { echo "nft: $FAIL_REASON"; exit 1; }
	if ! up; then
		echo "r$rep: tunnel down: ${FAIL_REASON:-}"
		down
		topo_down
		continue
	fi
	# As in run.sh's measure: idle pings first (they also teach yip the link).
	[ "$PINGS" -eq 0 ] || in_a ping -n -q -i 0.01 -c "$PINGS" -W 1 "$PEER" >"$F.ping" 2>&1
	in_a nstat -n >/dev/null 2>&1
	spawn "$NS_B" iperf3-server iperf3 -s -1 -p 5201
	srv=$LAST_PID
	wait_listen "$NS_B" t 5201 5
	c0=$(bench_py cpu "${DAEMON_PIDS[@]}" | sed 's/.*"cpu_s": \([0-9.e-]*\).*/\1/')
	if [ "$PCAP" -gt 0 ]; then
		# The inner stream where it enters yip (A) and where it leaves (B).
		in_a timeout "$PCAP" tcpdump -i "$TUN_DEV" -s 80 -w "$F.a.pcap" "tcp port 5201" >/dev/null 2>&1 &
		dumps=$!
		in_b timeout "$PCAP" tcpdump -i "$TUN_DEV" -s 80 -w "$F.b.pcap" "tcp port 5201" >/dev/null 2>&1 &
		dumps="$dumps $!"
		sleep 0.3
	fi
	in_a timeout $((SECS + 25)) iperf3 -c "$PEER" -p 5201 -P "$STREAMS" -t "$SECS" -J -C "$CC" \
		--connect-timeout 10000 >"$F.iperf.json" 2>"$F.iperf.err" &
	ipid=$!
	# The inner TCP's state every half second: cwnd, ssthresh, RTT, what limits it.
	: >"$F.ss"
	for _ in $(seq 1 $((SECS * 2))); do
		sleep 0.5
		{ echo "t=$(date +%s.%N)"; in_a ss -tinH state established "dport = :5201"; } >>"$F.ss" 2>/dev/null
	done
	wait "$ipid"
	c1=$(bench_py cpu "${DAEMON_PIDS[@]}" | sed 's/.*"cpu_s": \([0-9.e-]*\).*/\1/')
	stop_pids "$srv"
	tcp=$(nstat_a)
	# shellcheck disable=SC2086 # two pids
	[ "$PCAP" -eq 0 ] || wait $dumps
	# Drops of the device itself (the kernel's queue towards yipd A, and the writes in B).
	in_a ip -s -j link show "$TUN_DEV" >"$F.a.link.json" 2>/dev/null
	in_b ip -s -j link show "$TUN_DEV" >"$F.b.link.json" 2>/dev/null
	in_a tc -s qdisc show dev "$TUN_DEV" >"$F.a.qdisc" 2>/dev/null
	ctl a show --json >"$F.a.show.json" 2>/dev/null
	ctl b show --json >"$F.b.show.json" 2>/dev/null
	ctl a stats --json >"$F.a.stats.json" 2>/dev/null
	ctl b stats --json >"$F.b.stats.json" 2>/dev/null
	cp "$WORK/linkem.stats" "$F.linkem.stats" 2>/dev/null
	host_impair_stats "$F.hosts.json"
	down
	topo_down
	"$PY" - "$F" "$rep" "$tcp" "$c0" "$c1" "$SECS" <<'PY'
import json, sys
F, rep, tcp, c0, c1, secs = sys.argv[1:7]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return {}
ipj = load(F + ".iperf.json")
ip = ipj.get("end", {})
cc = ip.get("sender_tcp_congestion", "?")
mbps = ip.get("sum_received", {}).get("bits_per_second", 0) / 1e6
t = dict(kv.split("=") for kv in tcp.split())
segs, rtx = int(t.get("TcpOutSegs", 0)), int(t.get("TcpRetransSegs", 0))
tx = lambda k: int(t.get("TcpExt" + k, 0))
a = (load(F + ".a.show.json").get("peers") or [{}])[0]
b = (load(F + ".b.show.json").get("peers") or [{}])[0]
ad, bd = load(F + ".a.show.json").get("drops", {}), load(F + ".b.show.json").get("drops", {})
sa = load(F + ".a.stats.json").get("datapath", {})
sb = load(F + ".b.stats.json").get("datapath", {})
wire = a.get("wire_bytes", 0) or 1
cpu = (float(c1) - float(c0)) / float(secs) if c0 and c1 else 0
def nz(d):
    return " ".join("%s=%s" % (k, v) for k, v in d.items() if v)
extra = " ".join("%s=%s" % (k, v) for k, v in a.items()
                 if k.startswith(("arq_sent", "arq_history", "arq_late", "nacks_received", "recovery_mem")))
print("r%s %7.1f Mbit/s  %s segs=%d rtx=%d (%.3f%%)  cpu=%.2f  A: repair=%.1f%% arq_sent=%s loss_est=%s rtt=%s fec=%s"
      % (rep, mbps, cc, segs, rtx, 100.0 * rtx / segs if segs else 0, cpu,
         100.0 * a.get("repair_bytes", 0) / wire, a.get("arq_sent"), a.get("loss_estimate"),
         a.get("rtt_ms"), "/".join("%d+%d" % (v["k"], v["r"]) for v in a.get("fec", {}).values())))
def linkdrops(path):
    try:
        st = load(path)[0]["stats64"]
        return "tx_dropped=%d rx_dropped=%d" % (st["tx"]["dropped"], st["rx"]["dropped"])
    except Exception:
        return "?"
print("    devices: A %s, B %s" % (linkdrops(F + ".a.link.json"), linkdrops(F + ".b.link.json")))
print("    B: lost=%s fec=%s unrec=%s late=%s arq=%s  A trains=%s/%s  B drops: %s  A drops: %s"
      % (b.get("lost"), b.get("fec_recovered"), b.get("fec_unrecovered"), b.get("fec_late"),
         b.get("arq_recovered"), sa.get("udp_trains"), sa.get("udp_train_datagrams"),
         nz(bd) or "-", nz(ad) or "-"))
import re
ss = open(F + ".ss").read() if __import__("os").path.exists(F + ".ss") else ""
# Per sample, the connection that sent the most: the data stream, not iperf3's control connection.
samples = []
for block in ss.split("t=")[1:]:
    best = None
    for line in block.splitlines()[1:]:
        m = re.search(r"bytes_sent:(\d+)", line)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), line)
    if best:
        samples.append(best[1])
def fld(line, name):
    m = re.search(r"\b" + name + r":(\S+)", line)
    return m.group(1) if m else "-"
trace = ["%s/%s/%s" % (fld(l, "cwnd"), fld(l, "ssthresh"), fld(l, "rtt").split("/")[0]) for l in samples]
last = samples[-1] if samples else ""
print("    tcp (cwnd/ssthresh/rtt per 0.5 s): %s" % " ".join(trace[:16]))
print("    tcp: recoveries %d undone %d (full %d partial %d dsack %d loss %d) rto %d tlp %d reorder sack/ts %d/%d dsack %d; reordering %s"
      % (tx("TCPSackRecovery"), tx("TCPFullUndo") + tx("TCPPartialUndo") + tx("TCPDSACKUndo") + tx("TCPLossUndo"),
         tx("TCPFullUndo"), tx("TCPPartialUndo"), tx("TCPDSACKUndo"), tx("TCPLossUndo"), tx("TCPTimeouts"),
         tx("TCPLossProbes"), tx("TCPSACKReorder"), tx("TCPTSReorder"), tx("TCPDSACKRecv"), fld(last, "reordering")))
if extra:
    print("    A: " + extra)
extra_b = " ".join("%s=%s" % (k, v) for k, v in b.items() if k.startswith(("nacks_sent", "recovery_mem")))
if extra_b:
    print("    B: " + extra_b)
PY
	if [ "$PCAP" -gt 0 ]; then
		echo "    inner delay, first ${PCAP} s:"
		"$PY" "$HERE/diag/inner_delay.py" "$F.a.pcap" "$F.b.pcap" | sed 's/^/      /'
	fi
done
