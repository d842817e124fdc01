# Shared helpers for the network-namespace tests; sourced, not run.
# Each test builds its own namespaces (named after the test and its pid) and
# the EXIT trap removes them, the daemons and the temporary files, whatever
# happens.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
YIPD=${YIPD:-$ROOT/build/yipd}
TEST=$(basename "$0" .sh)
TMP=$(mktemp -d "/tmp/yip-$TEST.XXXXXX")
NSP="y$$"            # namespace prefix: short, unique per run
PIDS=()
NSS=()

log() { printf '[%s] %s\n' "$TEST" "$*"; }

fail() {
	printf '[%s] FAIL: %s\n' "$TEST" "$*"
	for f in "$TMP"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $(basename "$f") (last 30 lines)"
		tail -n 30 "$f"
	done
	exit 1
}

cleanup() {
	local rc=$?
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for n in "${NSS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || { echo "[$TEST] needs root (network namespaces, TUN)"; exit 1; }
[ -x "$YIPD" ] || { echo "[$TEST] $YIPD not built (run make)"; exit 1; }

ns() { echo "$NSP$1"; }            # ns a -> y1234a
in_ns() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

# make_ns NAME: a namespace with loopback up.
make_ns() {
	ip netns add "$(ns "$1")"
	NSS+=("$(ns "$1")")
	in_ns "$1" ip link set lo up
}

# link_pair A B IP_A IP_B: a veth between namespaces A and B, /24 addresses.
link_pair() {
	local a=$1 b=$2
	ip link add "v$NSP$a" netns "$(ns "$a")" type veth peer name "v$NSP$b" netns "$(ns "$b")"
	in_ns "$a" ip addr add "$3/24" dev "v$NSP$a"
	in_ns "$b" ip addr add "$4/24" dev "v$NSP$b"
	in_ns "$a" ip link set "v$NSP$a" up
	in_ns "$b" ip link set "v$NSP$b" up
}

# gen_key NAME: writes $TMP/NAME.key (private=/public= lines); echo the public key.
gen_key() {
	"$YIPD" --genkey >"$TMP/$1.key"
	sed -n 's/^public=//p' "$TMP/$1.key"
}
priv_of() { sed -n 's/^private=//p' "$TMP/$1.key"; }
pub_of() { sed -n 's/^public=//p' "$TMP/$1.key"; }
addr_of() { "$YIPD" --addr "$(pub_of "$1")"; }

# start_yipd NAME [ENV=VALUE...]: runs yipd in namespace NAME with $TMP/NAME.conf.
start_yipd() {
	local n=$1; shift
	env "$@" ip netns exec "$(ns "$n")" "$YIPD" -v "$TMP/$n.conf" >"$TMP/$n.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$n=$!"
	local i
	for i in $(seq 1 50); do
		if grep -q "device .* up" "$TMP/$n.log" 2>/dev/null; then return 0; fi
		kill -0 "$!" 2>/dev/null || fail "yipd $n exited at start"
		sleep 0.1
	done
	fail "yipd $n did not come up"
}
pid_of() { eval "echo \$PID_$1"; }

# status NAME: asks yipd for its status (SIGUSR1) and prints the fresh lines.
status() {
	local n=$1 before
	before=$(wc -l <"$TMP/$n.log")
	kill -USR1 "$(pid_of "$n")"
	local i
	for i in $(seq 1 30); do
		if tail -n +"$((before + 1))" "$TMP/$n.log" | grep -q "status: peer"; then break; fi
		sleep 0.1
	done
	tail -n +"$((before + 1))" "$TMP/$n.log" | grep "status:"
}

# drops NAME REASON: the drop counter REASON from a fresh status.
drops() { status "$1" | sed -n "s/.*status: drops.* $2=\([0-9]*\).*/\1/p"; }

# peer_field NAME FIELD: a field of the (first) peer line of a fresh status.
peer_field() { status "$1" | sed -n "s/.*status: peer .* $2 \([^ ]*\).*/\1/p" | head -n1; }

# ping_ok NS DEST COUNT [ARGS...]: fails unless every echo is answered.
ping_ok() {
	local n=$1 dst=$2 count=$3; shift 3
	local out
	out=$(in_ns "$n" ping -n -q -c "$count" -W 2 "$@" "$dst" 2>&1) || true
	echo "$out" | grep -q " 0% packet loss" || fail "ping $dst from $n: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
	echo "$out" | sed -n 's/^rtt.* = //p'
}

# two_peers: namespaces a and b joined by a veth (198.18.0.1/.2), keys, and
# configs for a tunnel 10.77.0.1 <-> 10.77.0.2. Extra config lines may be
# appended to $TMP/a.conf and $TMP/b.conf before start_yipd.
two_peers() {
	make_ns a
	make_ns b
	link_pair a b 198.18.0.1 198.18.0.2
	gen_key a >/dev/null
	gen_key b >/dev/null
	cat >"$TMP/a.conf" <<CONF
local_private=$(priv_of a)
listen=198.18.0.1:51820
device=yip0
address=10.77.0.1/24
[peer]
public_key=$(pub_of b)
endpoint=198.18.0.2:51820
allowed_ips=10.77.0.2/32
CONF
	cat >"$TMP/b.conf" <<CONF
local_private=$(priv_of b)
listen=198.18.0.2:51820
device=yip0
address=10.77.0.2/24
[peer]
public_key=$(pub_of a)
endpoint=198.18.0.1:51820
allowed_ips=10.77.0.1/32
CONF
}

# add_loss NAME PERCENT: drops PERCENT % of the UDP datagrams arriving at
# port 51820 in namespace NAME, at random (nftables numgen).
add_loss() {
	in_ns "$1" nft -f - <<NFT
table inet yiploss {
	chain input {
		type filter hook input priority 0; policy accept;
		udp dport 51820 numgen random mod 1000 < $(( $2 * 10 )) counter drop
	}
}
NFT
}
del_loss() { in_ns "$1" nft delete table inet yiploss 2>/dev/null || true; }
loss_dropped() { in_ns "$1" nft list table inet yiploss | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }

# ping_stats NS DEST COUNT [ARGS...]: prints "received p50 p99" (RTT ms) of a ping run.
ping_stats() {
	local n=$1 dst=$2 count=$3; shift 3
	in_ns "$n" ping -n -c "$count" -W 1 "$@" "$dst" 2>/dev/null |
		sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n |
		awk -v c="$count" '{ v[NR] = $1 } END {
			if (NR == 0) { print 0, 0, 0; exit }
			p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
			print NR, p50, p99 }'
}
