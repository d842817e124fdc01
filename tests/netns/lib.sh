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

# python3 is the interpreter itself, found once (as NATLAB_PYTHON is): a
# version manager's shim in PATH (pyenv's) is a shell script that costs a
# tenth of a second or more per start, and the tests start python3 for
# nearly every check.
if _py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$_py" ]; then
	mkdir "$TMP/bin"
	ln -s "$_py" "$TMP/bin/python3"
	PATH=$TMP/bin:$PATH
fi
unset _py

log() { printf '[%s] %s\n' "$TEST" "$*"; }

# fail MESSAGE: reports on stderr (callers' stdout may be redirected) and exits.
fail() {
	{
		printf '[%s] FAIL: %s\n' "$TEST" "$*"
		for f in "$TMP"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $(basename "$f") (last 30 lines)"
			tail -n 30 "$f"
		done
	} >&2
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

# The A - M - B topology of linked_peers; it names its namespaces like ns.
. "$ROOT/tests/lib/topology.sh"
# Its namespaces and the emulator are removed and stopped by cleanup.
topo_track() { case $1 in ns) NSS+=("$2") ;; pid) PIDS+=("$2") ;; esac; }

ns() { echo "$NSP$1"; }            # ns a -> y1234a
# in_ns NAME CMD...: runs CMD in namespace NAME. To start something in the
# background that must be killed later, call ip netns exec directly, so $!
# is the process itself and not a subshell around it.
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

# start_yipd NAME [ENV=VALUE...]: runs yipd in namespace NAME with $TMP/NAME.conf
# and waits until its device is up. launch_yipd starts it without waiting and
# wait_yipd waits, for tests that start several daemons at the same moment.
start_yipd() {
	launch_yipd "$@"
	wait_yipd "$1"
}
launch_yipd() {
	local n=$1; shift
	# Emptied here, not by the background job's redirection, so that the wait
	# below never reads the log of an earlier daemon of the same name.
	: >"$TMP/$n.log"
	# Each daemon gets its own control socket directory (see yipctl_of).
	env "YIP_CTL_DIR=$TMP/ctl-$n" "$@" ip netns exec "$(ns "$n")" "$YIPD" -v "$TMP/$n.conf" \
		>"$TMP/$n.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$n=$!"
}
wait_yipd() {
	local n=$1 pid
	pid=$(pid_of "$n")
	poll 5 'grep -q "device .* up" "$TMP/$n.log" 2>/dev/null ||
		{ kill -0 "$pid" 2>/dev/null || fail "yipd $n exited at start"; false; }' ||
		fail "yipd $n did not come up"
}
pid_of() { eval "echo \$PID_$1"; }

# yipctl_of NAME ARGS...: runs yipctl against NAME's daemon.
YIPCTL=${YIPCTL:-$ROOT/build/yipctl}
yipctl_of() { local n=$1; shift; YIP_CTL_DIR="$TMP/ctl-$n" "$YIPCTL" "$@"; }

# json_get NAME REQUEST PATH: one value of the daemon's JSON reply to REQUEST
# (show or stats) through yipctl; PATH is keys and list indices joined by
# dots (peers.0.lost). true/false print as yes/no, null as null.
json_get() {
	local out
	out=$(yipctl_of "$1" "$2" --json) || fail "yipctl $2 --json on $1 failed"
	echo "$out" | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print({True: "yes", False: "no", None: "null"}[v] if v is None or isinstance(v, bool) else v)' "$3" ||
		fail "no $3 in the reply of $1 to $2"
}

# drops NAME REASON: a drop counter of NAME's daemon.
drops() { json_get "$1" show "drops.$2"; }

# peer_field NAME FIELD [I]: a field of NAME's peer I (default 0), as in
# yipctl show --json (docs/control.md).
peer_field() { json_get "$1" show "peers.${3:-0}.$2"; }

# datapath NAME: the data-path counters of yipctl stats, as "key value" pairs on one line.
datapath() {
	yipctl_of "$1" stats --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["datapath"]
print(" ".join("%s %s" % (k, str(v).lower()) for k, v in d.items()))'
}

# established NAME: how many of NAME's peers have a usable session.
established() {
	yipctl_of "$1" show --json | python3 -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin)["peers"] if p["established"]))'
}

# recovery NAME: one line of NAME's first peer's loss and recovery counters.
recovery() {
	yipctl_of "$1" show --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["peers"][0]
print(" ".join("%s %s" % (k, p[k]) for k in ("lost", "fec_recovered", "fec_unrecovered",
      "arq_recovered", "arq_sent", "repair_sent", "repair_bytes", "wire_bytes", "loss_estimate",
      "rtt_ms")), " ".join("k/r %s %d/%d" % (c, v["k"], v["r"]) for c, v in p["fec"].items()))'
}

# ping_ok NS DEST COUNT [ARGS...]: fails unless every echo is answered.
ping_ok() {
	local n=$1 dst=$2 count=$3; shift 3
	local out
	out=$(in_ns "$n" ping -n -q -c "$count" -W 2 "$@" "$dst" 2>&1) || true
	grep -q " 0% packet loss" <<<"$out" || fail "ping $dst from $n: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
	echo "$out" | sed -n 's/^rtt.* = //p'
}

# wait_listen NS tcp|udp PORT: waits (up to 10 s) until a socket in
# namespace NS listens on TCP PORT, or is bound to UDP PORT; fails after that.
# For servers started in the background, before a client uses them.
wait_listen() {
	local n=$1 flag=t port=$3
	[ "$2" = udp ] && flag=u
	poll 10 '[ -n "$(in_ns "$n" ss -Hln$flag "sport = :$port")" ]' ||
		fail "nothing listens on $2 port $3 in $n after 10 s"
}

# pcap_pick PCAP OUT TYPE [SRC_IP]: writes to OUT the first UDP payload in
# PCAP (pcap, Ethernet, IPv4) whose first byte is TYPE (1: an Init), from
# SRC_IP if given and not empty; fails if there is none.
pcap_pick() {
	python3 - "$@" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
want, src = int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
off = 24
while off + 16 <= len(data):
    incl = struct.unpack_from("<I", data, off + 8)[0]
    pkt = data[off + 16: off + 16 + incl]
    off += 16 + incl
    ihl = (pkt[14] & 15) * 4
    payload = pkt[14 + ihl + 8:]
    if payload[:1] == bytes([want]) and (src is None or ".".join(map(str, pkt[26:30])) == src):
        open(sys.argv[2], "wb").write(payload)
        sys.exit(0)
sys.exit("no datagram of type %d in %s" % (want, sys.argv[1]))
PY
}

# poll SECONDS CONDITION [STEP]: evaluates the shell condition CONDITION every
# STEP seconds (default 0.1) until it holds; returns 1 if SECONDS (or more, on
# a loaded machine) pass first. It tries SECONDS / STEP times, and once more
# at the end, however long CONDITION takes. For a state that a daemon reaches
# after the test acted: `poll ... || fail MESSAGE`, or the caller asserts the
# same condition afterwards with its own message. CONDITION is evaluated
# inside poll: it names the caller's variables, not $1, $2, ...
poll() {
	local _ _step=${3:-0.1}
	for _ in $(seq 1 "$(awk -v s="$1" -v t="$_step" 'BEGIN { print int(s / t + 0.5) }')"); do
		eval "$2" && return 0
		sleep "$_step"
	done
	eval "$2"
}

# poll_since T0 SECONDS CONDITION [STEP]: like poll, but until SECONDS of the
# clock have passed since T0 (an $EPOCHREALTIME), then returns 1: for a test
# that also measures how long the state took to come.
poll_since() {
	local _t0=$1 _within=$2 _step=${4:-0.1}
	until eval "$3"; do
		awk -v a="$_t0" -v b="$EPOCHREALTIME" -v w="$_within" 'BEGIN { exit !(b - a > w) }' &&
			return 1
		sleep "$_step"
	done
}

# two_peers: namespaces a and b joined by a veth (198.18.0.1/.2), keys, and
# configs for a tunnel 10.77.0.1 <-> 10.77.0.2. Extra config lines may be
# appended to $TMP/a.conf and $TMP/b.conf before start_yipd.
two_peers() {
	make_ns a
	make_ns b
	link_pair a b 198.18.0.1 198.18.0.2
	write_configs
}

# linked_peers SPEC: like two_peers, but a and b reach each other through a
# third namespace m where yip-linkem forwards frames with the impairments of
# SPEC in both directions (see bench/linkem/README.md); tests/lib/topology.sh
# builds it (offloads off, so impairments apply to wire-sized frames). Its
# pid is LINKEM_PID, its counters $TMP/linkem.stats, its output $TMP/linkem.log.
linked_peers() {
	[ -x "$LINKEM" ] || fail "$LINKEM not built"
	topo_build --linkem "$1" --dir "$TMP" "$NSP" 198.18.0.1 198.18.0.2 || fail "$TOPO_ERR"
	write_configs
}

# Generous TCP buffers in a and b, so a 20 ms RTT is not window-bound, and
# the congestion control tcp_copy's sender uses ($TCP_CC). It is set per
# socket: a namespace may only pick from the host's allowed list (often
# just reno and bbr), while a privileged socket may use any available one.
tune_tcp() {
	local n
	TCP_CC=${1:-cubic}
	for n in a b; do
		in_ns "$n" sysctl -qw "net.ipv4.tcp_rmem=4096 131072 33554432" \
			"net.ipv4.tcp_wmem=4096 131072 33554432"
	done
}

# tcp_copy FROM TO_ADDR BYTES: copies BYTES of random data over one TCP
# connection from namespace FROM to TO_ADDR's namespace b; prints
# "seconds sha_ok".
tcp_copy() {
	local from=$1 to=$2 bytes=$3
	head -c "$bytes" /dev/urandom >"$TMP/src.bin"
	# The server gives up when no client comes, or a connection goes silent,
	# for 30 s, so that a failed client ends the test, not run.sh's timeout.
	ip netns exec "$(ns b)" python3 - "$TMP/dst.bin" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5400)); s.listen(1); s.settimeout(30)
c, _ = s.accept()
c.settimeout(30)
with open(sys.argv[1], "wb") as f:
    while True:
        d = c.recv(1 << 20)
        if not d: break
        f.write(d)
PY
	local srv=$!
	PIDS+=("$srv")
	wait_listen b tcp 5400
	local t0 t1
	t0=$(date +%s.%N)
	in_ns "$from" python3 - "$to" "$TMP/src.bin" "${TCP_CC:-cubic}" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[3].encode())
s.connect((sys.argv[1], 5400))
with open(sys.argv[2], "rb") as f:
    s.sendfile(f)
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
PY
	wait "$srv"
	t1=$(date +%s.%N)
	local ok=no
	[ "$(sha256sum <"$TMP/src.bin" | cut -d' ' -f1)" = "$(sha256sum <"$TMP/dst.bin" | cut -d' ' -f1)" ] && ok=yes
	awk -v a="$t0" -v b="$t1" -v ok="$ok" 'BEGIN { printf "%.2f %s\n", b - a, ok }'
}

# udp_stream FROM TO_ADDR COUNT RATE SIZE: sends COUNT numbered datagrams of
# SIZE bytes at RATE per second; prints how many distinct ones arrived.
udp_stream() {
	local from=$1 to=$2 count=$3 rate=$4 size=$5
	in_ns b python3 - "$count" >"$TMP/udp.count" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", 5401)); s.settimeout(3)
seen = set()
try:
    while len(seen) < int(sys.argv[1]):
        d = s.recv(65536)
        seen.add(int.from_bytes(d[:4], "big"))
except socket.timeout:
    pass
print(len(seen))
PY
	local rcv=$!
	wait_listen b udp 5401
	in_ns "$from" python3 - "$to" "$count" "$rate" "$size" <<'PY'
import socket, sys, time
to, count, rate, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pad = bytes(size - 4)
start = time.monotonic()
for i in range(count):
    delay = start + i / rate - time.monotonic()
    if delay > 0: time.sleep(delay)
    s.sendto(i.to_bytes(4, "big") + pad, (to, 5401))
PY
	wait "$rcv"
	cat "$TMP/udp.count"
}

# write_configs: keys and configs for a tunnel 10.77.0.1 (a) <-> 10.77.0.2 (b).
write_configs() {
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

# bridge_nodes NAMES...: one namespace per name on a shared bridge (in
# namespace "hub"), node i with 198.18.0.i on the wire, a key, and IDX_name=i.
bridge_nodes() {
	local i=0 n
	make_ns hub
	in_ns hub ip link add br0 type bridge
	in_ns hub ip link set dev br0 up
	for n in "$@"; do
		i=$((i + 1))
		make_ns "$n"
		ip link add "v$n$NSP" netns "$(ns "$n")" type veth peer name "h$n$NSP" netns "$(ns hub)"
		in_ns hub ip link set dev "h$n$NSP" master br0 up
		in_ns "$n" ip addr add "198.18.0.$i/24" dev "v$n$NSP"
		in_ns "$n" ip link set dev "v$n$NSP" up
		gen_key "$n" >/dev/null
		eval "IDX_$n=$i"
	done
}

# mesh NAMES...: one namespace per name on a shared bridge (in namespace
# "hub"); node i gets 198.18.0.i on the wire and 10.77.0.i in the tunnel, and
# a config listing every other node as a peer (endpoint and /32 allowed_ips).
mesh() {
	local i=0 j n m
	bridge_nodes "$@"
	for n in "$@"; do
		i=$(eval "echo \$IDX_$n")
		{
			echo "local_private=$(priv_of "$n")"
			echo "listen=198.18.0.$i:51820"
			echo "device=yip0"
			echo "address=10.77.0.$i/24"
			for m in "$@"; do
				[ "$m" = "$n" ] && continue
				j=$(eval "echo \$IDX_$m")
				printf '[peer]\npublic_key=%s\nendpoint=198.18.0.%s:51820\nallowed_ips=10.77.0.%s/32\n' \
					"$(pub_of "$m")" "$j" "$j"
			done
		} >"$TMP/$n.conf"
	done
}
idx_of() { eval "echo \$IDX_$1"; }

# as_tap NAMES...: switches the nodes' configs to device_kind=tap.
as_tap() {
	local n
	for n in "$@"; do sed -i '1a device_kind=tap' "$TMP/$n.conf"; done
}

# wait_ping NS DEST: waits (up to ~5 s) until one ping gets through.
wait_ping() {
	local from=$1 to=$2
	poll 5 'in_ns "$from" ping -n -c 1 -W 1 "$to" >/dev/null 2>&1' 0.2 ||
		fail "no ping from $1 to $2 within 5 s"
}

# ---- CA-gated networks (docs/membership.md) ----
YIPCA=${YIPCA:-$ROOT/build/yip-ca}
NET=testnet

# ca_init: a CA key ($TMP/ca.key), its public key in CA_PUB. $TMP is opened
# to other users so yipd, once it has dropped to its unprivileged user, can
# read the certificate, root set and revocation list again on SIGHUP.
ca_init() {
	[ -x "$YIPCA" ] || fail "$YIPCA not built"
	CA_PUB=$("$YIPCA" genkey --out "$TMP/ca.key") || fail "yip-ca genkey"
	chmod 755 "$TMP"
}

# ca_cert NAME [yip-ca sign-cert options...]: $TMP/NAME.crt for NAME's key
# (from its certificate request; KEY_OF=OTHER: OTHER's) in network
# ${CERT_NET:-$NET}, signed by ${CERT_CA:-$TMP/ca.key}, address 10.77.0.<index>.
ca_cert() {
	local n=$1; shift
	"$YIPD" --cert-request <"$TMP/${KEY_OF:-$n}.key" >"$TMP/$n.req" || fail "yipd --cert-request $n"
	"$YIPCA" sign-cert --ca-key "${CERT_CA:-$TMP/ca.key}" --request "$TMP/$n.req" \
		--network "${CERT_NET:-$NET}" \
		--name "node $n" --addr "10.77.0.$(idx_of "$n")" --force --out "$TMP/$n.crt" "$@" ||
		fail "yip-ca sign-cert $n"
	chmod 644 "$TMP/$n.crt"
}

# ca_roots FILE SERIAL NAMES...: a root set listing NAMES (their keys and
# addresses), of ${ROOTS_NET:-$NET}, signed by ${ROOTS_CA:-$TMP/ca.key}.
ca_roots() {
	local out=$1 serial=$2 args=() n; shift 2
	for n in "$@"; do args+=(--root "$(pub_of "$n")@198.18.0.$(idx_of "$n"):51820"); done
	"$YIPCA" sign-roots --ca-key "${ROOTS_CA:-$TMP/ca.key}" --network "${ROOTS_NET:-$NET}" \
		--serial "$serial" \
		"${args[@]}" --force --out "$out" || fail "yip-ca sign-roots"
	chmod 644 "$out"
}

# ca_nodes NAMES...: one namespace per name on a shared bridge, as mesh does
# (198.18.0.i on the wire, 10.77.0.i in the tunnel), but with no [peer]
# blocks: each has a certificate for 10.77.0.i, the CA key, the root set
# $TMP/roots.txt and a state directory. Extra lines may be appended to
# $TMP/NAME.conf before start_yipd.
ca_nodes() {
	local i=0 n
	bridge_nodes "$@"
	for n in "$@"; do
		ca_cert "$n"
		cat >"$TMP/$n.conf" <<CONF
local_private=$(priv_of "$n")
listen=198.18.0.$(idx_of "$n"):51820
device=yip0
address=10.77.0.$(idx_of "$n")/24
ca=$CA_PUB
cert=$TMP/$n.crt
roots=$TMP/roots.txt
state_dir=$TMP/state-$n
CONF
		chmod 600 "$TMP/$n.conf"
	done
}

# members_json NAME PATH: a value of `yipctl members --json` on NAME (as json_get).
members_json() { json_get "$1" members "$2"; }

# refused NAME VERDICT: how many handshakes NAME refused for VERDICT.
refused() { json_get "$1" show "membership.refused.$2"; }

# peer_count NAME: how many peers NAME's engine holds.
peer_count() {
	yipctl_of "$1" show --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["peers"]))'
}
