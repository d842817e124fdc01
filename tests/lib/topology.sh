# shellcheck shell=bash disable=SC2034  # sourced; callers read the names set here
# tests/lib/topology.sh: the A - M - B topology shared by the network-namespace
# tests (tests/netns/lib.sh, tests/netns/linkem_selftest.sh) and bench/compare.
# Sourced, not run.
#
#   namespace $NS_A              namespace $NS_M                  namespace $NS_B
#   $IF_A IP_A ==veth== $IF_MA  [ yip-linkem ]  $IF_MB ==veth== $IF_B IP_B
#
# M is a wire, not a router: A and B share one /24, and M's interfaces have no
# addresses. yip-linkem (bench/linkem/README.md) forwards frames between
# $IF_MA and $IF_MB and impairs them; until it runs, nothing passes.
#
# Cleanup stays with the caller. Before a namespace is created and after the
# emulator is started, topo_track is called (`topo_track ns NAME`,
# `topo_track pid PID`); the default does nothing, and a caller that needs
# the names for its cleanup redefines it after sourcing this file.

LINKEM=${LINKEM:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/yip-linkem}
LINKEM_PID=
LINKEM_LOG=
TOPO_ERR=

topo_track() { :; }

# topo_names PREFIX: sets the names without creating anything: namespaces
# NS_A, NS_M, NS_B (PREFIX followed by a, m, b) and interfaces IF_A (in A),
# IF_MA and IF_MB (in M), IF_B (in B), which carry PREFIX too so that they
# are unique on the host.
topo_names() {
	NS_A=${1}a NS_M=${1}m NS_B=${1}b
	IF_A=va$1 IF_MA=ma$1 IF_MB=mb$1 IF_B=vb$1
}

# topo_build [--mtu N] [--linkem SPEC --dir DIR] PREFIX IP_A IP_B
#   Creates the three namespaces (loopback up, IPv6 off in M so that M's own
#   stack sends nothing on the link), the veth pairs A-M and M-B with IP_A/24
#   on IF_A and IP_B/24 on IF_B, and turns off GRO, GSO, TSO and UDP
#   segmentation on all four ends: otherwise the kernel passes whole TCP or
#   UDP GSO trains as one frame, and impairments would hit trains, not packets.
#   --mtu N: MTU N on all four ends (default: the veth default, 1500).
#   --linkem SPEC: then starts yip-linkem with --both SPEC (empty SPEC: a
#   clean link) by topo_linkem, stats in DIR/linkem.stats and its output in
#   DIR/linkem.log, and waits with topo_wait_path. Without it nothing passes
#   until the caller does that.
#   Sets the variables of topo_names PREFIX, and IP_A and IP_B. Stops at the first
#   error and returns non-zero with the reason in TOPO_ERR.
topo_build() {
	local mtu='' spec='' dir='' linkem=0 n dev
	while [ $# -gt 3 ]; do
		case $1 in
		--mtu) mtu=$2 ;;
		--linkem) spec=$2 linkem=1 ;;
		--dir) dir=$2 ;;
		*) TOPO_ERR="topo_build: unknown option $1"; return 2 ;;
		esac
		shift 2
	done
	topo_names "$1"
	IP_A=$2 IP_B=$3
	# Every step is checked here, as callers without set -e (or calling this
	# in a condition, where set -e does not apply) rely on the return value.
	TOPO_ERR="could not build the topology $1 (see the error above)"
	for n in "$NS_A" "$NS_M" "$NS_B"; do
		topo_track ns "$n"
		ip netns add "$n" && ip -n "$n" link set dev lo up || return 1
	done
	ip netns exec "$NS_M" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_MA" netns "$NS_M" &&
		ip link add "$IF_B" netns "$NS_B" type veth peer name "$IF_MB" netns "$NS_M" &&
		ip -n "$NS_A" addr add "$IP_A/24" dev "$IF_A" &&
		ip -n "$NS_B" addr add "$IP_B/24" dev "$IF_B" || return 1
	for n in "$NS_A $IF_A" "$NS_M $IF_MA" "$NS_M $IF_MB" "$NS_B $IF_B"; do
		read -r n dev <<<"$n"
		if [ -n "$mtu" ]; then ip -n "$n" link set dev "$dev" mtu "$mtu" || return 1; fi
		if ! ip netns exec "$n" ethtool -K "$dev" gro off gso off tso off tx-udp-segmentation off >/dev/null; then
			TOPO_ERR="ethtool could not turn off the offloads of $dev"
			return 1
		fi
		ip -n "$n" link set dev "$dev" up || return 1
	done
	[ "$linkem" -eq 1 ] || return 0
	[ -n "$dir" ] || { TOPO_ERR="topo_build: --linkem needs --dir"; return 2; }
	topo_linkem "$dir/linkem.stats" "$dir/linkem.log" --both "$spec" && topo_wait_path
}

# topo_linkem STATS LOG [ARGS...]: starts yip-linkem in M between IF_MA and
# IF_MB with --stats STATS and ARGS (--both SPEC, --seed N, ...), its output
# in LOG; sets LINKEM_PID and waits (up to 5 s) until it is ready, that is
# until it writes STATS, which puts no traffic on the link. On failure it
# leaves nothing running, clears LINKEM_PID and says why in TOPO_ERR.
topo_linkem() {
	local stats=$1 _
	LINKEM_LOG=$2
	shift 2
	rm -f "$stats"
	# Not through a shell function: $! must be the emulator itself (ip netns
	# exec execs it), so that killing $! stops it.
	ip netns exec "$NS_M" "$LINKEM" "$IF_MA" "$IF_MB" --stats "$stats" "$@" </dev/null >"$LINKEM_LOG" 2>&1 &
	LINKEM_PID=$!
	topo_track pid "$LINKEM_PID"
	for _ in $(seq 1 100); do
		[ -s "$stats" ] && return 0
		kill -0 "$LINKEM_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$LINKEM_PID" 2>/dev/null; then
		TOPO_ERR="yip-linkem did not write its stats file $stats within 5 s"
		kill -KILL "$LINKEM_PID" 2>/dev/null || true
	else
		TOPO_ERR=$(topo_linkem_exited)
	fi
	wait "$LINKEM_PID" 2>/dev/null || true
	LINKEM_PID=
	return 1
}
topo_linkem_exited() { echo "yip-linkem exited: $(grep -v '^\s*$' "$LINKEM_LOG" | tail -n 1)"; }

# topo_wait_path: up to 50 one-second pings from A to IP_B, until one is
# answered. Fails (reason in TOPO_ERR) if none is, or if the emulator
# started by topo_linkem exits meanwhile.
topo_wait_path() {
	local _
	for _ in $(seq 1 50); do
		ip netns exec "$NS_A" ping -n -q -c 1 -W 1 "$IP_B" >/dev/null 2>&1 && return 0
		if [ -n "$LINKEM_PID" ] && ! kill -0 "$LINKEM_PID" 2>/dev/null; then
			TOPO_ERR=$(topo_linkem_exited)
			return 1
		fi
		sleep 0.1
	done
	TOPO_ERR="underlay does not pass a ping from $NS_A to $IP_B"
	return 1
}
