# shellcheck shell=bash disable=SC2034  # sourced; the contender files read these
# bench/compare/lib.sh: topology, link emulation and process helpers shared by
# run.sh and the contender files (contenders/*.sh). Sourced, not run.
#
# Topology, rebuilt for every contender by topo_build (tests/lib/topology.sh,
# shared with the network-namespace tests):
#
#   namespace A                namespace M                  namespace B
#   $IF_A 198.18.0.1 ==veth== $IF_MA  [link emulator]  $IF_MB ==veth== $IF_B 198.18.0.2
#
# The link emulator in M is build/yip-linkem when it exists (forwards raw
# Ethernet frames between $IF_MA and $IF_MB, impairing each direction). Without
# it, M falls back to a Linux bridge plus an nftables `numgen random` drop rule,
# which can only do random loss; conditions that need delay, bursts or
# reordering are then reported as skipped.
#
# Tunnel contenders put 198.19.0.1 (A) and 198.19.0.2 (B) on their devices
# (RFC 2544 benchmarking range, like the underlay). Every address used lives in
# namespaces this suite creates.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
TOOLS=$BENCH_DIR/tools
YIPD=${YIPD:-$ROOT/build/yipd}
LINKEM_BIN=${LINKEM_BIN:-$ROOT/build/yip-linkem}
PY=${PY:-$(python3 -c 'import sys; print(sys.executable)')}

. "$ROOT/tests/lib/topology.sh"
ID=${BENCH_ID:-$$}
NSP="yb$ID"
topo_names "$NSP" # NS_A, NS_M, NS_B; IF_A, IF_MA, IF_MB, IF_B
UL_A=198.18.0.1
UL_B=198.18.0.2
TUN_A=198.19.0.1
TUN_B=198.19.0.2
TUN_LEN=24

# RUN (a directory for logs and state) must be set by the caller.
: "${RUN:?RUN must be set before sourcing lib.sh}"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The final cleanup in run.sh deletes the namespaces in $RUN/netns and stops
# the processes in $RUN/pids.
topo_track() { case $1 in ns) echo "$2" >>"$RUN/netns" ;; pid) echo "$2" >>"$RUN/pids" ;; esac; }

in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }
in_m() { ip netns exec "$NS_M" "$@"; }
in_ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
bench_py() { "$PY" "$TOOLS/bench.py" "$@"; }

# ------------------------------------------------------------------ processes

DAEMON_PIDS=()   # the contender's tunnel daemons: their CPU time is measured
DAEMON_NAMES=()
LAST_PID=

# spawn NS NAME CMD...: runs CMD in namespace NS in the background with output
# in $WORK/NAME.log, records its pid in $RUN/pids (for the final cleanup) and
# sets LAST_PID. `ip netns exec` and `env` exec their command, so the pid is
# the command's own.
spawn() {
	local n=$1 name=$2; shift 2
	ip netns exec "$n" "$@" </dev/null >"$WORK/$name.log" 2>&1 &
	LAST_PID=$!
	echo "$LAST_PID" >>"$RUN/pids"
}

# daemon NS NAME CMD...: spawn, and count the process as a tunnel daemon.
daemon() {
	spawn "$@"
	DAEMON_PIDS+=("$LAST_PID")
	DAEMON_NAMES+=("$2")
}

# stop_pids PID...: TERM, wait up to 3 s, then KILL.
stop_pids() {
	local p i
	[ $# -gt 0 ] || return 0
	kill "$@" 2>/dev/null || true
	for i in $(seq 1 30); do
		local alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 0 ] && break
		sleep 0.1
	done
	kill -KILL "$@" 2>/dev/null || true
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

stop_daemons() {
	stop_pids "${DAEMON_PIDS[@]}"
	DAEMON_PIDS=()
	DAEMON_NAMES=()
}

# daemons_alive: fails (setting FAIL_REASON from the log) if a daemon exited.
daemons_alive() {
	local i
	for i in "${!DAEMON_PIDS[@]}"; do
		if ! kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null; then
			local last
			last=$(grep -v '^\s*$' "$WORK/${DAEMON_NAMES[$i]}.log" 2>/dev/null | tail -n 1 | cut -c1-160)
			FAIL_REASON="${DAEMON_NAMES[$i]} exited${last:+: $last}"
			return 1
		fi
	done
}

# ping_once NS ADDR: one echo, 1 s timeout.
ping_once() { ip netns exec "$1" ping -n -q -c 1 -W 1 "$2" >/dev/null 2>&1; }

# wait_ping ADDR SECONDS: until an echo from A to ADDR is answered. Sets
# FAIL_REASON and fails on timeout or when a tunnel daemon exits.
wait_ping() {
	local addr=$1 secs=$2 end
	end=$(($(date +%s) + secs))
	while [ "$(date +%s)" -lt "$end" ]; do
		ping_once "$NS_A" "$addr" && return 0
		daemons_alive || return 1
		sleep 0.2
	done
	FAIL_REASON="no ping reply from $addr within ${secs} s"
	return 1
}

# wait_file PATH SECONDS
wait_file() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_listen NS PROTO PORT SECONDS: until something listens there (t or u).
wait_listen() {
	local i
	for i in $(seq 1 $(($4 * 20))); do
		ip netns exec "$1" ss -Hln"$2" "sport = :$3" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# ------------------------------------------------------------------ topology

# topo_up: the namespaces and veths (see the top), TCP settings in A and B,
# and without yip-linkem a bridge in M. Fails with FAIL_REASON.
topo_up() {
	local n
	topo_build "$NSP" "$UL_A" "$UL_B" || { FAIL_REASON=$TOPO_ERR; return 1; }
	for n in "$NS_A" "$NS_B"; do
		# Same generous TCP buffers on both ends for every contender (the core
		# rmem_max/wmem_max limits are global on this kernel; run.sh sets them).
		# No cached TCP metrics: each test starts from a clean slate.
		ip netns exec "$n" sysctl -qw \
			net.ipv4.tcp_rmem="4096 131072 33554432" \
			net.ipv4.tcp_wmem="4096 16384 33554432" \
			net.ipv4.tcp_no_metrics_save=1 \
			net.ipv4.tcp_congestion_control=cubic
	done
	if [ -z "$LINKEM" ]; then
		in_m ip link add br0 type bridge stp_state 0 forward_delay 0
		in_m ip link set "$IF_MA" master br0
		in_m ip link set "$IF_MB" master br0
		in_m ip link set br0 up
	fi
}

topo_down() {
	link_stop
	local n p
	for n in "$NS_A" "$NS_M" "$NS_B"; do
		ip netns list | grep -qw "^$n" || continue
		# Anything still running inside our namespaces was started by us.
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$n" 2>/dev/null || true
	done
}

set_cc() { # set_cc cubic|bbr: TCP congestion control in A and B
	in_a sysctl -qw net.ipv4.tcp_congestion_control="$1"
	in_b sysctl -qw net.ipv4.tcp_congestion_control="$1"
}

# ------------------------------------------------------------------ link emulation

# LINKEM (run.sh: build/yip-linkem, or empty for the bridge) and LINKEM_PID
# (the running emulator) are tests/lib/topology.sh's.

link_stop() {
	if [ -n "$LINKEM_PID" ]; then
		stop_pids "$LINKEM_PID"
		LINKEM_PID=
	fi
	if [ -z "$LINKEM" ] && ip netns list | grep -qw "^$NS_M"; then
		in_m nft delete table bridge ybench 2>/dev/null || true
	fi
}

# link_supported SPEC: can the current emulator do SPEC?
link_supported() {
	[ -n "$LINKEM" ] && return 0
	local item
	for item in ${1//,/ }; do
		case "$item" in loss=*) ;; *) return 1 ;; esac
	done
}

# link_set SPEC: (re)start the emulator with SPEC applied in both directions
# (empty SPEC: a clean link), then wait until the underlay passes a ping.
link_set() {
	local spec=$1 seed=${2:-1}
	link_stop
	if [ -n "$LINKEM" ]; then
		local args=(--seed "$seed")
		[ -n "$spec" ] && args+=(--both "$spec")
		topo_linkem "$WORK/linkem.stats" "$WORK/linkem.log" "${args[@]}" || {
			FAIL_REASON=$TOPO_ERR
			return 1
		}
	else
		link_supported "$spec" || return 2
		local loss=0 item
		for item in ${spec//,/ }; do
			case "$item" in loss=*) loss=${item#loss=}; loss=${loss%\%} ;; esac
		done
		# drop with probability loss/100, per frame, each direction
		local thr
		thr=$(awk -v l="$loss" 'BEGIN{printf "%d", l * 10000}')
		in_m nft -f - <<NFT
table bridge ybench {
	chain impair {
		type filter hook forward priority 0; policy accept;
		iifname "$IF_MA" numgen random mod 1000000 < $thr drop
		iifname "$IF_MB" numgen random mod 1000000 < $thr drop
	}
}
NFT
	fi
	topo_wait_path || {
		FAIL_REASON="$TOPO_ERR (link '$spec')"
		return 1
	}
}

# ------------------------------------------------------------------ loss at the hosts

# host_impair LOSS TRAIN: nftables drops in A and B (percentages without the
# % sign; empty: none), replacing any from the previous cell.
#   LOSS: each IPv4/IPv6 frame arriving on A's or B's veth (netdev ingress
#     hook, before the host's IP stack) is dropped with probability LOSS.
#     GRO is off on those veths, so a frame is one datagram: per-datagram
#     random loss at the receiver, the alternative to the emulator's.
#   TRAIN: each IPv4/IPv6 packet A or B hands to its veth (netdev egress
#     hook, which runs before the kernel segments a GSO packet for a device
#     without segmentation offload) is dropped with probability TRAIN. A UDP
#     GSO train or a TCP GSO burst is one packet there and is lost whole, as
#     a qdisc on a congested sender drops it; a sender without GSO loses
#     single datagrams. The kernel then segments the survivors, so the
#     emulator still sees wire frames.
# Named counters (packets and bytes) count what each rule saw and dropped,
# and out_gso the sent packets longer than one frame (GSO trains and bursts);
# host_impair_stats reads them. numgen random is the kernel's PRNG: unlike
# the emulator's loss it cannot be seeded.
host_impair() {
	local loss=$1 train=$2 n dev
	host_impair_clear
	[ -n "$loss$train" ] || return 0
	for n in "$NS_A $IF_A" "$NS_B $IF_B"; do
		read -r n dev <<<"$n"
		{
			echo "table netdev ybimp {"
			if [ -n "$loss" ]; then
				echo "  counter in_seen {}"
				echo "  counter in_lost {}"
				echo "  chain in { type filter hook ingress device \"$dev\" priority 0; policy accept;"
				echo "    meta protocol { ip, ip6 } counter name in_seen"
				echo "    meta protocol { ip, ip6 } numgen random mod 1000000 < $(host_thr "$loss") counter name in_lost drop"
				echo "  }"
			fi
			if [ -n "$train" ]; then
				echo "  counter out_seen {}"
				echo "  counter out_gso {}"
				echo "  counter out_lost {}"
				echo "  chain out { type filter hook egress device \"$dev\" priority 0; policy accept;"
				echo "    meta protocol { ip, ip6 } counter name out_seen"
				# longer than one 1500-byte frame with its Ethernet header: a GSO packet
				echo "    meta protocol { ip, ip6 } meta length > 1514 counter name out_gso"
				echo "    meta protocol { ip, ip6 } numgen random mod 1000000 < $(host_thr "$train") counter name out_lost drop"
				echo "  }"
			fi
			echo "}"
		} >"$WORK/nft-$n.conf"
		if ! ip netns exec "$n" nft -f "$WORK/nft-$n.conf" 2>"$WORK/nft-$n.err"; then
			FAIL_REASON="nft in $n: $(head -n 1 "$WORK/nft-$n.err")"
			return 1
		fi
	done
}
host_thr() { awk -v p="$1" 'BEGIN { printf "%d", p * 10000 + 0.5 }'; } # per million

host_impair_clear() {
	local n
	for n in "$NS_A" "$NS_B"; do
		ip netns exec "$n" nft delete table netdev ybimp 2>/dev/null || true
	done
}

# host_impair_stats FILE: the counters of host_impair as one JSON object
# ({} when no drops are installed).
host_impair_stats() {
	if ! in_a nft list table netdev ybimp >/dev/null 2>&1; then
		echo "{}" >"$1"
		return
	fi
	in_a nft -j list counters table netdev ybimp >"$1.a" 2>/dev/null
	in_b nft -j list counters table netdev ybimp >"$1.b" 2>/dev/null
	bench_py nft-stats --a "$1.a" --b "$1.b" >"$1"
}

# pkg_version PKG: the installed Debian package version (empty if none).
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
