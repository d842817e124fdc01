#!/usr/bin/env bash
# bench/compare/run.sh: yip next to the tunnels people use, on the same
# emulated links, in the same run. Needs root. See bench/compare/README.md.
#
#   run.sh                 the full comparison -> docs/benchmarks/
#   run.sh --quick         yip vs wireguard-go, clean and 5 % loss at 20 ms RTT
#   run.sh --contenders yip,raw --conditions clean,loss5 --out DIR
#   run.sh --conditions clean,wan --loss-at both --reps 3 --reps-others 1 --out DIR
#
# --conditions takes names and the sets "default", "wan", "rate" and "all".
# --loss-at link|hosts|both: random loss in the emulator (default), with
#   nftables at A's and B's ingress (the emulator then only delays), or both.
# --reps N: runs of every yip cell (default 3; 1 with --quick);
# --reps-others N: runs of every other contender's cell (default 1).
# --keep-tunnel: one tunnel per contender through all conditions (the old
#   behaviour; only for studying it, see README).
# Raw logs of every run go to build/bench/<mode>-<date>/.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ARGS="$*"
MODE=full
CONTENDERS=
CONDITIONS=
OUT=
LOSS_AT='link'
REPS=
REPS_OTHERS=1
KEEP_TUNNEL=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick ;;
	--contenders) CONTENDERS=${2//,/ }; shift ;;
	--conditions) CONDITIONS=${2//,/ }; shift ;;
	--out) OUT=$2; shift ;;
	--loss-at) LOSS_AT=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--reps-others) REPS_OTHERS=$2; shift ;;
	--keep-tunnel) KEEP_TUNNEL=1 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
case "$LOSS_AT" in link | hosts | both) ;; *) echo "run.sh: --loss-at link|hosts|both" >&2; exit 2 ;; esac
for n in "${REPS:-1}" "$REPS_OTHERS"; do
	case "$n" in '' | *[!0-9]* | 0) echo "run.sh: --reps/--reps-others need a positive number" >&2; exit 2 ;; esac
done

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (network namespaces, TUN devices, sysctls); run it as root, e.g. sudo make bench-$MODE" >&2
	exit 1
fi
for tool in ip nft ethtool ping iperf3 ss python3; do
	command -v "$tool" >/dev/null || { echo "bench: '$tool' is missing (run scripts/deps.sh)" >&2; exit 1; }
done

ROOT=$(cd "$HERE/../.." && pwd)
STAMP=$(date +%Y%m%d-%H%M%S)
RUN=$ROOT/build/bench/$MODE-$STAMP
mkdir -p "$RUN"
: >"$RUN/pids"
: >"$RUN/netns"
. "$HERE/lib.sh"

LINKEM=
if [ -x "$LINKEM_BIN" ]; then
	LINKEM=$LINKEM_BIN
else
	log "WARNING: $LINKEM_BIN not found: using a bridge + nftables random loss; conditions with delay, bursts or reordering are skipped"
fi

# ------------------------------------------------------------------ plan

# name|link spec (both directions)|congestion control|title
#
# A link spec is yip-linkem's SPEC (bench/linkem/README.md) plus one key of
# this suite, train=P%: nftables at A's and B's egress drop each packet the
# host's stack hands to its veth with probability P, before the kernel cuts
# it into wire frames, so a UDP GSO train (or a TCP GSO burst) is lost as a
# whole, as a sender's qdisc drops it. The emulator never sees train=.
ALL_CONDITIONS="
clean||cubic|Clean link
loss1|loss=1%|cubic|1 % random loss each way
loss5|loss=5%|cubic|5 % random loss each way
loss10|loss=10%|cubic|10 % random loss each way
loss20|loss=20%|cubic|20 % random loss each way
burst5|loss=5%,burst=4|cubic|5 % burst loss each way (Gilbert-Elliott, mean burst 4)
reorder1|reorder=1%,reorder_gap=1ms|cubic|1 % reordering each way (held back 1 ms)
rtt20|delay=10ms|cubic|20 ms RTT, clean
rtt20-bbr|delay=10ms|bbr|20 ms RTT, clean, BBR
rtt20-loss1|delay=10ms,loss=1%|cubic|20 ms RTT, 1 % loss each way
rtt20-loss1-bbr|delay=10ms,loss=1%|bbr|20 ms RTT, 1 % loss each way
rtt20-loss5|delay=10ms,loss=5%|cubic|20 ms RTT, 5 % loss each way
rtt20-loss5-bbr|delay=10ms,loss=5%|bbr|20 ms RTT, 5 % loss each way
rtt50|delay=25ms|cubic|50 ms RTT, clean
rtt50-loss1|delay=25ms,loss=1%|cubic|50 ms RTT, 1 % loss each way
rtt50-loss1-bbr|delay=25ms,loss=1%|bbr|50 ms RTT, 1 % loss each way
rtt50-loss5|delay=25ms,loss=5%|cubic|50 ms RTT, 5 % loss each way
rtt50-loss5-bbr|delay=25ms,loss=5%|bbr|50 ms RTT, 5 % loss each way
rtt100|delay=50ms|cubic|100 ms RTT, clean
rtt100-loss1|delay=50ms,loss=1%|cubic|100 ms RTT, 1 % loss each way
rtt100-loss1-bbr|delay=50ms,loss=1%|bbr|100 ms RTT, 1 % loss each way
rtt100-loss5|delay=50ms,loss=5%|cubic|100 ms RTT, 5 % loss each way
rtt100-loss5-bbr|delay=50ms,loss=5%|bbr|100 ms RTT, 5 % loss each way
rtt20-train1|delay=10ms,train=1%|cubic|20 ms RTT, 1 % of sent packets (whole GSO trains) lost each way
rtt20-train5|delay=10ms,train=5%|cubic|20 ms RTT, 5 % of sent packets (whole GSO trains) lost each way
rate200|rate=200mbit,delay=10ms|cubic|200 Mbit/s, 20 ms RTT, clean
rate200-loss1|rate=200mbit,delay=10ms,loss=1%|cubic|200 Mbit/s, 20 ms RTT, 1 % loss each way
rate200-loss5|rate=200mbit,delay=10ms,loss=5%|cubic|200 Mbit/s, 20 ms RTT, 5 % loss each way
"
ALL_CONTENDERS="raw yip wireguard-go openvpn tinc n2n yggdrasil nebula"
# Named sets for --conditions.
SET_DEFAULT="clean loss1 loss5 loss10 loss20 burst5 reorder1 rtt20 rtt20-bbr rtt20-loss1 rtt20-loss1-bbr rtt20-loss5 rtt20-loss5-bbr"
SET_WAN="rtt20 rtt20-loss1 rtt20-loss1-bbr rtt20-loss5 rtt20-loss5-bbr rtt50 rtt50-loss1 rtt50-loss1-bbr rtt50-loss5 rtt50-loss5-bbr rtt100 rtt100-loss1 rtt100-loss1-bbr rtt100-loss5 rtt100-loss5-bbr rtt20-train1 rtt20-train5"
# A link slower than the CPU: the link, not the machine, bounds every
# contender, and its queue (the emulator's 1 000 frames, 60 ms at this
# rate) fills as a bottleneck's does.
SET_RATE="rate200 rate200-loss1 rate200-loss5"
SET_ALL=$(echo "$ALL_CONDITIONS" | cut -d'|' -f1 | xargs)

if [ "$MODE" = quick ]; then
	: "${CONTENDERS:=yip wireguard-go}"
	: "${CONDITIONS:=clean rtt20-loss5}"
	: "${REPS:=1}"
	# seconds (PING_N: echoes at 10 ms); COPY_MB=0 skips the file copy
	T1=${T1:-5} T4=${T4:-3} PING_N=${PING_N:-100} UDP_T=${UDP_T:-2} RR_T=${RR_T:-3}
	COPY_MB=${COPY_MB:-0} COPY_TIMEOUT=${COPY_TIMEOUT:-15}
	OUT=${OUT:-$RUN}
else
	: "${CONTENDERS:=$ALL_CONTENDERS}"
	: "${CONDITIONS:=default}"
	: "${REPS:=3}"
	T1=${T1:-6} T4=${T4:-4} PING_N=${PING_N:-200} UDP_T=${UDP_T:-3} RR_T=${RR_T:-4}
	COPY_MB=${COPY_MB:-100} COPY_TIMEOUT=${COPY_TIMEOUT:-12}
	OUT=${OUT:-$ROOT/docs/benchmarks}
fi
UDP_PPS=${UDP_PPS:-1000}
UDP_SIZE=${UDP_SIZE:-1200}
RR_SIZE=${RR_SIZE:-64}

cond_field() { # cond_field NAME FIELD(1-4); NAME may carry @hosts
	echo "$ALL_CONDITIONS" | awk -F'|' -v n="${1%@hosts}" -v f="$2" '$1 == n { print $f; found = 1 } END { exit !found }'
}
# spec_get SPEC KEY: the value of KEY in SPEC (empty if absent)
spec_get() {
	local item
	for item in ${1//,/ }; do
		case "$item" in "$2"=*) echo "${item#*=}"; return ;; esac
	done
}
# spec_drop SPEC KEY...: SPEC without those keys
spec_drop() {
	local spec=$1 item out='' k keep
	shift
	for item in ${spec//,/ }; do
		keep=1
		for k in "$@"; do case "$item" in "$k"=*) keep=0 ;; esac; done
		[ $keep -eq 1 ] && out=${out:+$out,}$item
	done
	echo "$out"
}

# The plan: condition ids in run order. An id is a condition's name, with
# @hosts appended when its random loss is applied by nftables at the hosts
# instead of by the emulator (--loss-at, or the id given explicitly).
PLAN=
plan_add() { case " $PLAN " in *" $1 "*) ;; *) PLAN="${PLAN:+$PLAN }$1" ;; esac; }
for word in $CONDITIONS; do
	# shellcheck disable=SC2086 # the sets are lists of words
	case "$word" in
	default) set -- $SET_DEFAULT ;;
	wan) set -- $SET_WAN ;;
	rate) set -- $SET_RATE ;;
	all) set -- $SET_ALL ;;
	*) set -- "$word" ;;
	esac
	for c in "$@"; do
		cond_field "$c" 1 >/dev/null || { echo "bench: unknown condition '$c'" >&2; exit 2; }
		spec=$(cond_field "$c" 2)
		if [ "$c" != "${c%@hosts}" ]; then
			[ -n "$(spec_get "$spec" loss)" ] || { echo "bench: '$c': condition ${c%@hosts} has no loss= to move to the hosts" >&2; exit 2; }
			plan_add "$c"
		elif [ -z "$(spec_get "$spec" loss)" ]; then
			plan_add "$c"
		else
			case "$LOSS_AT" in
			link) plan_add "$c" ;;
			hosts) plan_add "$c@hosts" ;;
			both) plan_add "$c"; plan_add "$c@hosts" ;;
			esac
		fi
	done
done
for c in $CONTENDERS; do
	[ -f "$HERE/contenders/$c.sh" ] || { echo "bench: no contender file contenders/$c.sh" >&2; exit 2; }
done
reps_of() { case "$1" in yip*) echo "$REPS" ;; *) echo "$REPS_OTHERS" ;; esac; }

# ------------------------------------------------------------------ global state

SAVED_SYSCTLS=()
save_and_set() { # save_and_set KEY VALUE (init namespace)
	SAVED_SYSCTLS+=("$1=$(sysctl -n "$1" | tr '\t' ' ')")
	sysctl -qw "$1=$2"
}

cleanup() {
	local rc=$? p n
	trap - EXIT INT TERM
	# Only processes this run started, and only while they are still inside
	# one of this run's namespaces.
	while read -r p; do
		[ -n "$p" ] || continue
		n=$(ip netns identify "$p" 2>/dev/null) || continue
		case "$n" in "$NSP"?) kill -KILL "$p" 2>/dev/null || true ;; esac
	done <"$RUN/pids"
	while read -r n; do
		[ -n "$n" ] && ip netns del "$n" 2>/dev/null
	done <"$RUN/netns"
	for kv in "${SAVED_SYSCTLS[@]}"; do sysctl -qw "$kv" || true; done
	rm -f "$RUN/testfile"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Socket buffer limits are global on this kernel: raise them for the run (the
# same for every contender) and put them back afterwards. CUBIC must be in the
# allowed list for a non-initial namespace to select it.
save_and_set net.core.rmem_max 33554432
save_and_set net.core.wmem_max 33554432
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
want=$allowed
for cc in cubic bbr; do
	case " $want " in *" $cc "*) ;; *) want="$want $cc" ;; esac
done
[ "$want" = "$allowed" ] || save_and_set net.ipv4.tcp_allowed_congestion_control "$want"

ROWS=$RUN/rows.jsonl
: >"$ROWS"
row() { bench_py row "$@" >>"$ROWS"; }

if [ "$COPY_MB" -gt 0 ]; then
	bench_py make-file --file "$RUN/testfile" --mb "$COPY_MB" >/dev/null
fi

cpu_model=$(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n 1)
linkem_desc="bridge + nftables random drop (yip-linkem not built)"
if [ -n "$LINKEM" ]; then
	linkem_desc="build/yip-linkem"
	[ -d "$ROOT/.git" ] && linkem_desc="build/yip-linkem (tree $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
fi
row kind=meta mode="$MODE" date="$(date -u '+%Y-%m-%d %H:%M UTC')" \
	command="${BENCH_CMD:-$0${ARGS:+ $ARGS}}" cpu="$cpu_model" cores:="$(nproc)" \
	kernel="$(uname -r)" os="$(. /etc/os-release && echo "$PRETTY_NAME")" \
	mem_gib:="$(awk '/MemTotal/ {printf "%d", $2/1048576 + 0.5}' /proc/meminfo)" \
	linkem="$linkem_desc" t1:="$T1" t4:="$T4" ping_n:="$PING_N" udp_t:="$UDP_T" \
	udp_pps:="$UDP_PPS" udp_size:="$UDP_SIZE" rr_t:="$RR_T" rr_size:="$RR_SIZE" \
	copy_mb:="$COPY_MB" copy_timeout:="$COPY_TIMEOUT" \
	reps:="$REPS" reps_others:="$REPS_OTHERS" loss_at="$LOSS_AT" keep_tunnel:="$KEEP_TUNNEL" \
	iperf3="$(iperf3 --version 2>/dev/null | head -n 1)" \
	nft="$(nft --version 2>/dev/null)" \
	python="$("$PY" --version 2>&1)"
for id in $PLAN; do
	where='link'
	[ "$id" = "${id%@hosts}" ] || where=hosts
	row kind=condition name="$id" base="${id%@hosts}" spec="$(cond_field "$id" 2)" \
		cc="$(cond_field "$id" 3)" title="$(cond_field "$id" 4)" loss_at="$where"
done

# ------------------------------------------------------------------ measurements

TEST_PIDS=()
tspawn() { # tspawn NS NAME CMD...: a test helper process, stopped after each test
	spawn "$@"
	TEST_PIDS+=("$LAST_PID")
}
tstop() {
	stop_pids "${TEST_PIDS[@]}"
	TEST_PIDS=()
}
cpu_now() { bench_py cpu "${DAEMON_PIDS[@]}" | sed 's/.*"cpu_s": \([0-9.e-]*\).*/\1/'; }
# B's UDP receive-buffer overflows so far (datagrams the kernel dropped
# because a socket in B was full; per namespace).
rcvbuf_now() { in_b awk '/^Udp:/ { if (h) { print $f; exit } for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") f = i; h = 1 }' /proc/net/snmp; }

# iperf_tcp STREAMS SECONDS OUTFILE
iperf_tcp() {
	tspawn "$NS_B" iperf3-server iperf3 -s -1 -p 5201
	wait_listen "$NS_B" t 5201 5 || log "iperf3 server did not start"
	in_a timeout $(($2 + 25)) iperf3 -c "$PEER" -p 5201 -P "$1" -t "$2" -J \
		--connect-timeout 10000 >"$3" 2>"$3.err"
	tstop
}

# measure NAME CC: every metric for one contender x condition; writes files
# $F.* and prints nothing. The order keeps the idle RTT free of other traffic.
measure() {
	local F=$WORK/$1
	# Idle RTT: PING_N echoes at 10 ms.
	in_a timeout $((PING_N / 100 + 10)) ping -n -i 0.01 -c "$PING_N" -W 1 "$PEER" >"$F.ping-idle" 2>&1
	bench_py ping-stats <"$F.ping-idle" >"$F.idle.json"

	# TCP, one stream, with the loaded RTT measured in its middle.
	local c0 c1 c2 ip r0 r2
	c0=$(cpu_now)
	r0=$(rcvbuf_now)
	tspawn "$NS_B" iperf3-server iperf3 -s -1 -p 5201
	wait_listen "$NS_B" t 5201 5 || log "iperf3 server did not start"
	in_a timeout $((T1 + 25)) iperf3 -c "$PEER" -p 5201 -t "$T1" -J \
		--connect-timeout 10000 >"$F.tcp1.json" 2>"$F.tcp1.err" &
	ip=$!
	sleep 1.5
	in_a timeout $((T1 + 5)) ping -n -i 0.01 -c $(((T1 - 3) * 100)) -W 1 "$PEER" >"$F.ping-loaded" 2>&1
	# A contender may record its own state while the stream runs (probe).
	if declare -F probe >/dev/null; then probe >"$F.probe" 2>&1; fi
	wait "$ip"
	tstop
	c1=$(cpu_now)
	bench_py ping-stats <"$F.ping-loaded" >"$F.loaded.json"
	bench_py iperf --file "$F.tcp1.json" >"$F.tcp1.res"

	# TCP, four streams.
	iperf_tcp 4 "$T4" "$F.tcp4.json"
	c2=$(cpu_now)
	r2=$(rcvbuf_now)
	bench_py iperf --file "$F.tcp4.json" >"$F.tcp4.res"
	echo "{\"cpu0\": $c0, \"cpu1\": $c1, \"cpu2\": $c2}" >"$F.cpu.json"
	echo "{\"drops\": $((${r2:-0} - ${r0:-0}))}" >"$F.rcvbuf.json"

	# Delivered loss of a steady UDP stream.
	local run=$((RANDOM * 32768 + RANDOM))
	tspawn "$NS_B" udp-recv "$PY" "$TOOLS/bench.py" udp-recv --port 7003 --seconds $((UDP_T + 5)) --idle 1 --run "$run"
	local rpid=$LAST_PID
	wait_listen "$NS_B" u 7003 5 || log "UDP receiver did not start"
	in_a "$PY" "$TOOLS/bench.py" udp-send --host "$PEER" --port 7003 --pps "$UDP_PPS" \
		--seconds "$UDP_T" --size "$UDP_SIZE" --run "$run" >"$F.udp-send.json" 2>"$F.udp-send.err"
	wait "$rpid" 2>/dev/null
	cp "$WORK/udp-recv.log" "$F.udp-recv.json"
	tstop

	# Request/response over one TCP connection.
	tspawn "$NS_B" rr-server "$PY" "$TOOLS/bench.py" rr-server --port 7001 --size "$RR_SIZE" --deadline $((RR_T + 30))
	wait_listen "$NS_B" t 7001 5 || log "rr server did not start"
	in_a timeout $((RR_T + 30)) "$PY" "$TOOLS/bench.py" rr-client --host "$PEER" --port 7001 \
		--size "$RR_SIZE" --seconds "$RR_T" --stall 5 >"$F.rr.json" 2>"$F.rr.err"
	tstop

	# Bulk copy of the test file, checked with SHA-256.
	if [ "$COPY_MB" -gt 0 ]; then
		tspawn "$NS_B" xfer-server "$PY" "$TOOLS/bench.py" xfer-server --port 7002 --deadline $((COPY_TIMEOUT + 10))
		wait_listen "$NS_B" t 7002 5 || log "copy server did not start"
		in_a timeout $((COPY_TIMEOUT + 20)) "$PY" "$TOOLS/bench.py" xfer-client --host "$PEER" --port 7002 \
			--file "$RUN/testfile" --timeout "$COPY_TIMEOUT" >"$F.copy.json" 2>"$F.copy.err"
		sleep 0.2
		tstop
		cp "$WORK/xfer-server.log" "$F.copysrv.json"
	fi

	# What the emulator and the hosts' nftables drops did during the whole cell.
	if [ -n "$LINKEM_PID" ]; then
		kill -USR1 "$LINKEM_PID" 2>/dev/null
		sleep 0.2
		bench_py linkem-stats --file "$WORK/linkem.stats" >"$F.link.json"
	fi
	host_impair_stats "$F.hosts.json"
}

cell_row() { # cell_row CONTENDER ID CC SPEC STATUS [extra row args]
	local c=$1 n=$2 cc=$3 spec=$4 st=$5 where=link; shift 5
	[ "$n" = "${n%@hosts}" ] || where=hosts
	row kind=cell contender="$c" condition="$n" base="${n%@hosts}" cc="$cc" spec="$spec" \
		loss_at="$where" status="$st" "$@"
}

# cell_link ID SEED: the link of condition ID: the emulator with the part of
# the spec it applies, and nftables in A and B for the loss it does not
# (loss= when ID ends in @hosts, train= always). Fails with FAIL_REASON;
# returns 2 when this setup cannot produce the condition (SKIP_REASON).
cell_link() {
	local id=$1 seed=$2 spec lspec hloss='' train
	spec=$(cond_field "$id" 2)
	train=$(spec_get "$spec" train)
	lspec=$(spec_drop "$spec" train)
	if [ "$id" != "${id%@hosts}" ]; then
		if [ -n "$(spec_get "$spec" burst)" ]; then
			SKIP_REASON="skipped: burst loss needs the emulator"
			return 2
		fi
		hloss=$(spec_get "$spec" loss)
		lspec=$(spec_drop "$lspec" loss)
	fi
	if ! link_supported "$lspec"; then
		SKIP_REASON="skipped: needs build/yip-linkem"
		return 2
	fi
	link_set "$lspec" "$seed" || return 1
	host_impair "${hloss%\%}" "${train%\%}"
}

# cell_up: a fresh tunnel over the current link (one retry).
cell_up() {
	FAIL_REASON=
	up >>"$WORK/up.log" 2>&1 && return 0
	log "$NAME/$ID: tunnel did not come up ($FAIL_REASON); trying once more"
	down >/dev/null 2>&1
	FAIL_REASON=
	up >>"$WORK/up.log" 2>&1 && return 0
	[ -n "$FAIL_REASON" ] || FAIL_REASON=$(tail -n 1 "$WORK/up.log")
	return 1
}

# run_cell ID CC SPEC REP: one run of one condition; WORK is its directory.
run_cell() {
	local id=$1 cc=$2 spec=$3 rep=$4 ct0=$SECONDS
	measure "$id" "$cc"
	local F=$WORK/$id copy=()
	[ "$COPY_MB" -gt 0 ] && copy=("@copy=$F.copy.json" "@copysrv=$F.copysrv.json")
	cell_row "$NAME" "$id" "$cc" "$spec" ok rep:="$rep" \
		@idle="$F.idle.json" @loaded="$F.loaded.json" @tcp1="$F.tcp1.res" @tcp4="$F.tcp4.res" \
		@cpu="$F.cpu.json" @rcvbuf="$F.rcvbuf.json" @link="$F.link.json" @hosts="$F.hosts.json" \
		@udps="$F.udp-send.json" @udpr="$F.udp-recv.json" @rr="$F.rr.json" \
		"${copy[@]}" \
		ndaemons:="${#DAEMON_PIDS[@]}" secs:=$((SECONDS - ct0))
	log "$NAME/$id${REPS_N:+ run $rep/$REPS_N}: $(tail -n 1 "$ROWS" | "$PY" -c '
import json, sys
r = json.loads(sys.stdin.read())
def g(k, f="%s"):
    v = r.get(k)
    return f % v if isinstance(v, (int, float)) else "-"
print("tcp1 %s Mbit/s, tcp4 %s, idle p50 %s ms, udp %s/%s, rr p50 %s us, copy %s" % (
    g("tcp1_mbps"), g("tcp4_mbps"), g("idle_p50_ms"), g("udpr_received"), g("udps_sent"),
    g("rr_p50_us"), g("copy_seconds") if r.get("copy_status") == "ok" else r.get("copy_status", "-")))
') ($((SECONDS - ct0)) s)"
}

# run_contender NAME: everything for one contender; runs in a subshell so the
# contender's functions and variables stay its own.
#
# Every run of every condition gets a fresh tunnel, started after the link
# has that condition: the tunnel a user has on such a path. A tunnel kept
# up while the emulator changes the path under it carries state from the
# previous condition into the next: a TCP peering connection (Yggdrasil's)
# with BBR keeps the minimum RTT of a 0 ms link for BBR's 10 s window and
# runs with a window of a few dozen packets on a 20 ms path (README,
# "Why every cell starts its own tunnel"). --keep-tunnel restores that
# behaviour for studying it.
run_contender() {
	NAME=$1
	local base=$RUN/$NAME
	WORK=$base/setup
	mkdir -p "$WORK"
	DESC=$NAME PEER='' TUN_DEV=''
	# shellcheck source=/dev/null
	. "$HERE/contenders/$NAME.sh"
	local ver reason t0 id spec cc rep seed idx=0
	REPS_N=$(reps_of "$NAME")
	[ "$REPS_N" -gt 1 ] || REPS_N=
	ver=$(version 2>/dev/null | head -n 1)
	t0=$(date +%s)
	if ! reason=$(available 2>&1); then
		log "$NAME: not installed ($reason)"
		row kind=contender name="$NAME" desc="$DESC" version="${ver:-?}" status="not installed: $reason"
		for id in $PLAN; do
			cell_row "$NAME" "$id" "$(cond_field "$id" 3)" "$(cond_field "$id" 2)" "not installed"
		done
		return 0
	fi

	trap 'down >/dev/null 2>&1; topo_down' EXIT
	# Once on a clean link: does it start at all, how long does it take, and
	# which MTU does it pick.
	FAIL_REASON=
	local up_ok=1 up_t0 up_s=
	if ! topo_up || ! link_set "" 1; then
		up_ok=0
	else
		up_t0=$(date +%s.%N)
		if up >"$WORK/up.log" 2>&1; then
			up_s=$(awk -v a="$up_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		else
			up_ok=0
			[ -n "$FAIL_REASON" ] || FAIL_REASON=$(tail -n 1 "$WORK/up.log")
		fi
	fi
	if [ $up_ok -eq 0 ]; then
		log "$NAME: failed to start: $FAIL_REASON"
		row kind=contender name="$NAME" desc="$DESC" version="${ver:-?}" status="failed to start: $FAIL_REASON"
		for id in $PLAN; do
			cell_row "$NAME" "$id" "$(cond_field "$id" 3)" "$(cond_field "$id" 2)" "failed to start"
		done
		return 0
	fi
	local mtu
	mtu=$(in_a cat "/sys/class/net/$TUN_DEV/mtu" 2>/dev/null)
	log "$NAME: up in ${up_s} s (peer $PEER, MTU ${mtu:-?})"
	row kind=contender name="$NAME" desc="$DESC" version="${ver:-?}" notes="$(notes 2>/dev/null)" \
		mtu:="$mtu" peer="$PEER" up_s:="$up_s" status=ok reps:="${REPS_N:-1}"
	[ "$KEEP_TUNNEL" -eq 1 ] || down >/dev/null 2>&1

	for id in $PLAN; do
		ID=$id
		spec=$(cond_field "$id" 2)
		cc=$(cond_field "$id" 3)
		idx=$((idx + 1))
		for rep in $(seq 1 "${REPS_N:-1}"); do
			# The same seed for every contender in a given condition and run.
			seed=$((idx * 10 + rep))
			WORK=$base/$id.r$rep
			mkdir -p "$WORK"
			FAIL_REASON='' SKIP_REASON=''
			cell_link "$id" "$seed"
			case $? in
			0) ;;
			2)
				cell_row "$NAME" "$id" "$cc" "$spec" "$SKIP_REASON" rep:="$rep"
				break
				;;
			*)
				log "$NAME/$id: link: $FAIL_REASON"
				cell_row "$NAME" "$id" "$cc" "$spec" "link emulator failed: $FAIL_REASON" rep:="$rep"
				continue
				;;
			esac
			set_cc "$cc"
			local tunnel_ok=1
			if [ "$KEEP_TUNNEL" -eq 0 ]; then
				cell_up || tunnel_ok=0
			elif ! wait_ping "$PEER" 15; then
				log "$NAME/$id: tunnel down ($FAIL_REASON); restarting it"
				down >/dev/null 2>&1
				cell_up && wait_ping "$PEER" 15 || tunnel_ok=0
			fi
			if [ $tunnel_ok -eq 0 ]; then
				log "$NAME/$id: tunnel down: $FAIL_REASON"
				cell_row "$NAME" "$id" "$cc" "$spec" "tunnel down: $FAIL_REASON" rep:="$rep"
				down >/dev/null 2>&1
				continue
			fi
			run_cell "$id" "$cc" "$spec" "$rep"
			[ "$KEEP_TUNNEL" -eq 1 ] || down >/dev/null 2>&1
		done
	done
	down >/dev/null 2>&1
	topo_down
	trap - EXIT
	log "$NAME: done in $(($(date +%s) - t0)) s"
}

t_start=$(date +%s)
log "mode $MODE: contenders: $CONTENDERS; conditions: $PLAN; runs: yip* $REPS, others $REPS_OTHERS; logs in $RUN"
for c in $CONTENDERS; do
	(run_contender "$c")
done
total=$(($(date +%s) - t_start))
row kind=total seconds:="$total"
log "measurements done in $total s"

mkdir -p "$OUT"
"$PY" "$HERE/tools/report.py" --rows "$ROWS" --out "$OUT" --mode "$MODE" --svg-dir "$OUT"
