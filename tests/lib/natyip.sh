# shellcheck shell=bash disable=SC2034  # sourced; callers read the names set here
# tests/lib/natyip.sh: yipd nodes and yip-rendezvous servers in the NAT lab
# (tests/lib/natlab.sh), for the tests/netns/nat_*.sh tests. Sourced after
# tests/netns/lib.sh: the lab takes lib.sh's namespace prefix, so the lab's
# host NAME is the namespace `ns NAME` names, start_yipd NAME runs a daemon
# there, and cleanup removes the lab's namespaces and processes.
#
#   ny_lab                                  the internet (natlab_internet)
#   ny_build CMD...                         a natlab step; fails the test on error
#   ny_rdv_start NAME ADDR:PORT [OPTS...]   yip-rendezvous in NAME (a public host)
#   ny_rdv_stop NAME                        SIGTERM, and waits for it
#   rdv NAME ARGS...                        yip-rendezvous ARGS against NAME's server
#   rdv_get NAME PATH                       a value of NAME's `status --json`
#   rdv_node NAME NODE FIELD                a field of NODE's entry at server NAME
#   ny_node NAME IP                         a node: keys, tunnel address IP
#   ny_conf [--line K=V]... NODE SERVERS PEER...   NODE's config, no endpoint=
#   ny_peer A B FIELD...                    fields of A's peer B (yipctl show --json)
#   ny_kind A B                             direct, relayed or none: A's path to B
#   ny_wait_direct A B                      until both paths are direct (10 s)
#   ny_server_state NODE I                  the state of NODE's server I
#   ny_classify SERVER A1 A2 HOST...        checks each host's NAT with natlab_classify
#   ny_tcp_copy FROM TO TO_IP BYTES RATE    a paced TCP transfer, hashed
#   ny_drop_udp NODE                        NODE's UDP dropped both ways (table inet noudp)
#
# Servers: NY_RDV_ADDR[NAME] (ADDR:PORT), NY_RDV_PUB[NAME], pid_of NAME.
# Nodes: NY_IP[NAME], their tunnel address (10.77.0.0/24).

. "$ROOT/tests/lib/natlab.sh"
natlab_track() { case $1 in ns) NSS+=("$2") ;; pid) PIDS+=("$2") ;; esac; }

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built (run make)"
for tool in nft conntrack; do
	command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh installs it)"
done
declare -gA NY_RDV_ADDR=() NY_RDV_PUB=() NY_IP=()

ny_lab() { natlab_internet "$NSP" || fail "$NATLAB_ERR"; }
ny_build() { "$@" || fail "$NATLAB_ERR"; }

# ny_rdv_start NAME ADDR:PORT [OPTS...]: runs yip-rendezvous in NAME's
# namespace on ADDR:PORT (and the next port), its key $TMP/NAME.rdvkey made
# on the first start and kept across restarts, its control socket in
# $TMP/ctl-NAME, its log $TMP/NAME.log (appended to); waits until it listens.
ny_rdv_start() {
	local n=$1 listen=$2 log=$TMP/$1.log start pid _
	shift 2
	if [ ! -e "$TMP/$n.rdvkey" ]; then
		(umask 077 && "$RDV" --genkey >"$TMP/$n.rdvkey")
	fi
	NY_RDV_PUB[$n]=$(sed -n 's/^public=//p' "$TMP/$n.rdvkey")
	NY_RDV_ADDR[$n]=$listen
	touch "$log"
	start=$(wc -l <"$log")
	env "YIP_CTL_DIR=$TMP/ctl-$n" ip netns exec "$(ns "$n")" "$RDV" -v --listen "$listen" \
		--key "$TMP/$n.rdvkey" "$@" >>"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	eval "PID_$n=$pid"
	poll 5 'tail -n +$((start + 1)) "$log" | grep -q "listening on" ||
		{ kill -0 "$pid" 2>/dev/null || fail "yip-rendezvous $n exited at start"; false; }' ||
		fail "yip-rendezvous $n did not start"
}

ny_rdv_stop() {
	local pid
	pid=$(pid_of "$1")
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

rdv() {
	local n=$1
	shift
	YIP_CTL_DIR="$TMP/ctl-$n" "$RDV" "$@"
}

# _ny_json PATH: one value of the JSON document on stdin; PATH is keys and
# list indices joined by dots; true/false print as yes/no, null as null.
_ny_json() {
	python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print({True: "yes", False: "no", None: "null"}[v] if v is None or isinstance(v, bool) else v)' "$1"
}

rdv_get() {
	local out
	out=$(rdv "$1" status --json) || fail "yip-rendezvous status --json of $1 failed"
	_ny_json "$2" <<<"$out" || fail "no $2 in the status of $1"
}

# rdv_node NAME NODE FIELD: prints "missing" if the server does not know NODE.
rdv_node() {
	local out
	out=$(rdv "$1" status --json) || fail "yip-rendezvous status --json of $1 failed"
	python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n["public_key"] == sys.argv[1]:
        v = n[sys.argv[2]]
        print(json.dumps(v) if isinstance(v, (list, dict)) else v)
        break
else:
    print("missing")' "$(pub_of "$2")" "$3" <<<"$out"
}

# ny_node NAME IP: keys ($TMP/NAME.key) for node NAME (a lab host), tunnel
# address IP. The lab turns IPv6 off in its namespaces; devices created from
# now on (yipd's, which carries the key-derived address) get it back.
ny_node() {
	gen_key "$1" >/dev/null
	NY_IP[$1]=$2
	in_ns "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=0 || fail "IPv6 for yipd in $1"
}

# ny_conf [--line KEY=VALUE]... NODE SERVERS PEER...: writes $TMP/NODE.conf:
# listening on every address at port 51820, the servers named in SERVERS
# (comma-separated, started with ny_rdv_start, or with NY_RDV_ADDR and
# NY_RDV_PUB set), the extra interface lines, and each PEER with only its
# public key and tunnel address.
ny_conf() {
	local extra=() n servers s p
	while [ "$1" = --line ]; do
		extra+=("$2")
		shift 2
	done
	n=$1 servers=$2
	shift 2
	{
		echo "local_private=$(priv_of "$n")"
		echo "listen=0.0.0.0:51820"
		echo "device=yip0"
		echo "address=${NY_IP[$n]}/24"
		for s in ${servers//,/ }; do
			echo "rendezvous=${NY_RDV_ADDR[$s]}"
			echo "rendezvous_key=${NY_RDV_PUB[$s]}"
		done
		for s in "${extra[@]}"; do echo "$s"; done
		for p in "$@"; do
			printf '[peer]\npublic_key=%s\nallowed_ips=%s/32\n' "$(pub_of "$p")" "${NY_IP[$p]}"
		done
	} >"$TMP/$n.conf"
}

# ny_peer A B FIELD...: each FIELD of A's peer B in yipctl show --json, one
# per line (true/false as yes/no, null as null, lists and objects as JSON).
ny_peer() {
	local a=$1 b=$2 out
	shift 2
	out=$(yipctl_of "$a" show --json) || fail "yipctl show --json on $a failed"
	python3 -c '
import json, sys
for p in json.load(sys.stdin)["peers"]:
    if p["public_key"] == sys.argv[1]:
        for f in sys.argv[2:]:
            v = p[f]
            print({True: "yes", False: "no", None: "null"}[v] if v is None or isinstance(v, bool)
                  else json.dumps(v) if isinstance(v, (list, dict)) else v)
        break
else:
    sys.exit("no such peer")' "$(pub_of "$b")" "$@" <<<"$out" || fail "$a has no peer $b"
}

# ny_kind A B: "direct", "relayed" or "none" (no current path): A's path to B.
ny_kind() {
	case $(ny_peer "$1" "$2" path) in
	direct*) echo direct ;;
	relayed*) echo relayed ;;
	*) echo none ;;
	esac
}

# ny_wait_direct A B: waits (up to 10 s) until A's path to B and B's to A are
# direct; fails naming both paths.
ny_wait_direct() {
	local a=$1 b=$2
	poll 10 '[ "$(ny_kind "$a" "$b")/$(ny_kind "$b" "$a")" = direct/direct ]' 0.2 ||
		fail "$a and $b are not direct: $a: $(ny_peer "$a" "$b" path), $b: $(ny_peer "$b" "$a" path)"
}

# ny_server_state NODE I: the state of NODE's rendezvous server I (0-based).
ny_server_state() {
	local out
	out=$(yipctl_of "$1" show --json) || fail "yipctl show --json on $1 failed"
	_ny_json "rendezvous.$2.state" <<<"$out" || fail "$1 has no rendezvous server $2"
}

# ny_classify SERVER ADDR1 ADDR2 HOST...: checks, with plain UDP probes
# before any yipd runs, that each HOST's NATs behave as built: a udpprobe
# server in the public host SERVER on ADDR1 and ADDR2 (ports 3478 and 3479),
# natlab_classify of every HOST at once, compared with natlab_expected.
ny_classify() {
	local srv=$1 a1=$2 a2=$3 h pids=() pid
	shift 3
	ny_build natlab_server "$srv" "$TMP/udpprobe.out" "$a1:3478" "$a1:3479" "$a2:3478" "$a2:3479"
	pid=$NATLAB_SERVER_PID
	for h in "$@"; do
		(
			if natlab_classify "$h" "$a1" "$a2"; then
				echo "$NATLAB_MAPPING $NATLAB_FILTERING"
			else
				echo "failed: $NATLAB_ERR"
			fi
		) >"$TMP/classify.$h" 2>&1 &
		pids+=($!)
	done
	for h in "${pids[@]}"; do wait "$h" || true; done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	for h in "$@"; do
		natlab_expected "$h" || fail "$NATLAB_ERR"
		[ "$(cat "$TMP/classify.$h")" = "$NATLAB_WANT_MAPPING $NATLAB_WANT_FILTERING" ] ||
			fail "$h's NAT probes as '$(cat "$TMP/classify.$h")', built as" \
				"$NATLAB_WANT_MAPPING $NATLAB_WANT_FILTERING"
		log "$h: NAT mapping $NATLAB_WANT_MAPPING, filtering $NATLAB_WANT_FILTERING (probed)"
	done
}

# ny_tcp_copy FROM TO TO_IP BYTES RATE: sends BYTES of random data over one
# TCP connection from node FROM to TO_IP:5400 in node TO, paced to RATE
# bytes per second (so that a test can act while it runs); prints
# "seconds sha_ok" (yes if the bytes received hash like those sent).
ny_tcp_copy() {
	local from=$1 to=$2 ip=$3 bytes=$4 rate=$5 srv t0 t1 ok=no
	head -c "$bytes" /dev/urandom >"$TMP/copy.src"
	rm -f "$TMP/copy.ready" "$TMP/copy.dst"
	in_ns "$to" python3 - "$TMP/copy.dst" "$TMP/copy.ready" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5400)); s.listen(1)
s.settimeout(30)
open(sys.argv[2], "w").close()
c, _ = s.accept()
c.settimeout(30)
with open(sys.argv[1], "wb") as f:
    while True:
        d = c.recv(1 << 20)
        if not d: break
        f.write(d)
PY
	srv=$!
	poll 5 '[ -e "$TMP/copy.ready" ]' || true
	t0=$EPOCHREALTIME
	in_ns "$from" python3 - "$ip" "$TMP/copy.src" "$rate" <<'PY' || true
import socket, sys, time
s = socket.create_connection((sys.argv[1], 5400), timeout=60)
rate, chunk, sent = float(sys.argv[3]), 1 << 16, 0
start = time.monotonic()
with open(sys.argv[2], "rb") as f:
    while True:
        d = f.read(chunk)
        if not d: break
        s.sendall(d)
        sent += len(d)
        delay = start + sent / rate - time.monotonic()
        if delay > 0: time.sleep(delay)
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
PY
	wait "$srv" || true
	t1=$EPOCHREALTIME
	[ -e "$TMP/copy.dst" ] &&
		[ "$(sha256sum <"$TMP/copy.src" | cut -d' ' -f1)" = "$(sha256sum <"$TMP/copy.dst" | cut -d' ' -f1)" ] && ok=yes
	awk -v a="$t0" -v b="$t1" -v ok="$ok" 'BEGIN { printf "%.2f %s\n", b - a, ok }'
}

# ny_drop_udp NODE: every UDP datagram to or from NODE dropped (loopback
# aside), counted, as a network that blocks UDP blocks it both ways; the
# table is inet noudp (nft delete table inet noudp lets it through again).
ny_drop_udp() {
	in_ns "$1" nft -f - <<NFT || fail "nft in $1"
table inet noudp {
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "lo" accept
		meta l4proto udp counter drop
	}
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "lo" accept
		meta l4proto udp counter drop
	}
}
NFT
}
