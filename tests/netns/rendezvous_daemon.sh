#!/usr/bin/env bash
# yip-rendezvous as an operator meets it, and two yipd that find each other
# through it. First the command line: --genkey and --pubkey, bad options and
# settings (exit 2 and a message), key files that are missing, not files, or
# open to group and others (refused, exit 2). Then, on a bridge of four
# namespaces (a, b, c: nodes; s: the server on [::]:7000, dual-stack):
#   - `yip-rendezvous status` and `status --json` answer;
#   - yipd a and b, which have NO endpoint= for each other, register over
#     IPv4 (IPv4-mapped at the server), are introduced and ping each other;
#     c registers over IPv6; the status shows all three, by address;
#   - with direct UDP between a and b dropped, restarted a and b ping each
#     other through the server's relay, and its counters show the datagrams;
#     a UDP stream of 2000 datagrams crosses the relay too;
#   - SIGUSR1 logs the status; SIGTERM ends it with status 0 and removes its
#     control socket.
. "$(dirname "$0")/lib.sh"

RDV=${RDV:-$ROOT/build/yip-rendezvous}
[ -x "$RDV" ] || fail "$RDV not built (run make)"

# expect_usage PHRASE ARGS...: yip-rendezvous ARGS exits 2 with PHRASE on stderr.
expect_usage() {
	local phrase=$1 status=0 err
	shift
	err=$(timeout --kill-after=2 10 "$RDV" "$@" 2>&1 >/dev/null) || status=$?
	[ "$status" -eq 2 ] || fail "yip-rendezvous $*: exit status $status, wanted 2 ($err)"
	case $err in *"$phrase"*) ;; *) fail "yip-rendezvous $*: wanted '$phrase', got: $err" ;; esac
}

log "--genkey, --pubkey"
(umask 077 && "$RDV" --genkey >"$TMP/server.key")
SPUB=$(sed -n 's/^public=//p' "$TMP/server.key")
[ ${#SPUB} -eq 64 ] || fail "--genkey printed no public key"
[ "$("$RDV" --pubkey <"$TMP/server.key")" = "$SPUB" ] || fail "--pubkey disagrees with --genkey"

log "bad options and settings: exit 2 with a message"
expect_usage "unrecognized option" --bogus
expect_usage "unexpected argument 'extra'" --key "$TMP/server.key" extra
expect_usage "--relay: expected 'on' or 'off', got 'maybe'" --key "$TMP/server.key" --relay maybe
expect_usage "--relay-rate: expected bytes per second" --key "$TMP/server.key" --relay-rate 20G
expect_usage "--relay-burst: bytes must be at least 65536" --key "$TMP/server.key" --relay-burst 1K
expect_usage "--max-nodes: expected a number" --key "$TMP/server.key" --max-nodes 0
expect_usage "--listen: missing port" --key "$TMP/server.key" --listen 198.18.0.9
expect_usage "alt_port 7000 is the listen port" --key "$TMP/server.key" --alt-port 7000
expect_usage "no key file" --relay on
printf 'listen=[::]:7000\nrelay=on\nrelay_rate=fast\n' >"$TMP/bad.conf"
expect_usage "bad.conf:3: relay_rate: expected bytes per second" --config "$TMP/bad.conf"
printf 'relay=on\nrelay=off\n' >"$TMP/dup.conf"
expect_usage "dup.conf:2: duplicate key 'relay'" --config "$TMP/dup.conf"

log "key files: missing, not a file, open to others, not a key"
expect_usage "$TMP/nokey: cannot open" --key "$TMP/nokey"
expect_usage "$TMP: not a regular file" --key "$TMP"
cp "$TMP/server.key" "$TMP/open.key"
chmod 644 "$TMP/open.key"
expect_usage "mode 0644 lets group or others at the private key" --key "$TMP/open.key"
chmod 640 "$TMP/open.key"
expect_usage "mode 0640" --key "$TMP/open.key"
(umask 077 && echo "private=abc" >"$TMP/short.key")
expect_usage "short.key:1: private: expected 64 hex digits" --key "$TMP/short.key"

# ---- a bridge: a=198.18.0.1, b=.2, c=.3, s=.4 (and fd77::1 .. ::4) ----
mesh a b c s
for n in a b c s; do
	in_ns "$n" ip -6 addr add "fd77::$(idx_of "$n")/64" dev "v$n$NSP" nodad
done

log "server on [::]:7000 (dual-stack), from a configuration file"
cat >"$TMP/rdv.conf" <<CONF
# the server's settings; the command line adds -v
listen = [::]:7000
key = $TMP/server.key
relay_rate = 64M
CONF
# The daemon's user (nobody, once sandboxed) owns the socket directory, so
# a clean exit can remove the socket.
mkdir -m 0700 "$TMP/ctl-s"
chown nobody "$TMP/ctl-s"
env "YIP_CTL_DIR=$TMP/ctl-s" ip netns exec "$(ns s)" "$RDV" -v --config "$TMP/rdv.conf" \
	>"$TMP/rdv.log" 2>&1 &
RDV_PID=$!
PIDS+=("$RDV_PID")
poll 5 'grep -q "listening on" "$TMP/rdv.log" ||
	{ kill -0 "$RDV_PID" 2>/dev/null || fail "yip-rendezvous exited at start"; false; }' || true
grep -q "public key $SPUB" "$TMP/rdv.log" || fail "the start log does not name the public key"
grep -q "listening on \[::\]:7000, second port 7001" "$TMP/rdv.log" ||
	fail "the start log does not name the addresses"

rdv() { YIP_CTL_DIR="$TMP/ctl-s" "$RDV" "$@"; }
# rdv_get PATH: one value of `status --json` (keys and list indices joined by dots).
rdv_get() {
	rdv status --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print({True: "yes", False: "no", None: "null"}[v] if v is None or isinstance(v, bool) else v)' "$1" ||
		fail "no $1 in yip-rendezvous status --json"
}
# node_get NAME FIELD: a field of node NAME's entry in the server's status.
node_get() {
	rdv status --json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n["public_key"] == sys.argv[1]:
        print(n[sys.argv[2]])
        break
else:
    print("missing")' "$(pub_of "$1")" "$2"
}

log "status answers"
text=$(rdv status) || fail "yip-rendezvous status failed"
grep -q "public key: $SPUB" <<<"$text" || fail "status text: $text"
[ "$(rdv_get public_key)" = "$SPUB" ] || fail "status --json: wrong public key"
[ "$(rdv_get port)" = 7000 ] && [ "$(rdv_get alt_port)" = 7001 ] || fail "status --json: ports"
[ "$(rdv_get relay_rate)" = $((64 << 20)) ] || fail "status --json: relay_rate from the file"
[ "$(rdv_get nodes_known)" = 0 ] || fail "nodes before any registered"
expect_usage "--summary lists no node" status --summary "$SPUB"

# node_conf NAME LISTEN RENDEZVOUS [PEER]: a node with the server and at most one
# peer, without endpoint=.
node_conf() {
	{
		echo "local_private=$(priv_of "$1")"
		echo "listen=$2"
		echo "device=yip0"
		echo "address=10.77.0.$(idx_of "$1")/24"
		echo "rendezvous=$3"
		echo "rendezvous_key=$SPUB"
		if [ -n "${4:-}" ]; then
			printf '[peer]\npublic_key=%s\nallowed_ips=10.77.0.%s/32\n' "$(pub_of "$4")" \
				"$(idx_of "$4")"
		fi
	} >"$TMP/$1.conf"
	grep -q endpoint "$TMP/$1.conf" && fail "node $1 has an endpoint"
	return 0
}
node_conf a 198.18.0.1:51820 198.18.0.4:7000 b
node_conf b 198.18.0.2:51820 198.18.0.4:7000 a
node_conf c "[fd77::3]:51820" "[fd77::4]:7000"

# wait_registered N: until the server shows N registered nodes (10 s).
wait_registered() {
	local want=$1
	poll 10 '[ "$(rdv_get nodes_registered)" = "$want" ]' 0.2 ||
		fail "the server shows $(rdv_get nodes_registered) registered nodes, wanted $1"
}

log "yipd a and b (no endpoints) register over IPv4, c over IPv6"
start_yipd a
start_yipd b
start_yipd c
wait_registered 3
[ "$(node_get a address)" = 198.18.0.1:51820 ] || fail "a's address: $(node_get a address)"
[ "$(node_get b address)" = 198.18.0.2:51820 ] || fail "b's address: $(node_get b address)"
[ "$(node_get c address)" = "[fd77::3]:51820" ] || fail "c's address: $(node_get c address)"

log "a and b find each other through the server and ping"
wait_ping a 10.77.0.2
ping_ok a 10.77.0.2 5 -i 0.1 >/dev/null
ping_ok b 10.77.0.1 5 -i 0.1 >/dev/null
[ "$(rdv_get counters.intros)" -ge 1 ] || fail "the server introduced no one"
[ "$(node_get a intros)" -ge 1 ] && [ "$(node_get b intros)" -ge 1 ] ||
	fail "a and b were not both introduced"
[ "$(peer_field a established)" = yes ] || fail "a has no session with b"
rdv status | sed 's/^/    /'
summary=$(rdv status --summary)
grep -q "^node:" <<<"$summary" && fail "status --summary lists nodes"
grep -q "nodes: 3 registered" <<<"$summary" || fail "status --summary: $summary"
[ "$(rdv status "$(pub_of c)" | grep -c "^node:")" = 1 ] || fail "status <c's key> does not list c alone"

log "direct UDP between a and b dropped: restarted, they ping through the relay"
for n in a b; do
	kill "$(pid_of "$n")"
	wait "$(pid_of "$n")" 2>/dev/null || true
done
in_ns a nft add table inet cut
in_ns a nft add chain inet cut input '{ type filter hook input priority 0; policy accept; }'
in_ns a nft add rule inet cut input ip saddr 198.18.0.2 udp dport 51820 drop
in_ns b nft add table inet cut
in_ns b nft add chain inet cut input '{ type filter hook input priority 0; policy accept; }'
in_ns b nft add rule inet cut input ip saddr 198.18.0.1 udp dport 51820 drop
relayed0=$(rdv_get counters.relayed_dgrams)
start_yipd a
start_yipd b
# 15 pings of up to a second each.
poll 1.5 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' || true
ping_ok a 10.77.0.2 10 -i 0.1 >/dev/null
ping_ok b 10.77.0.1 10 -i 0.1 >/dev/null
relayed=$(( $(rdv_get counters.relayed_dgrams) - relayed0 ))
[ "$relayed" -ge 40 ] || fail "only $relayed datagrams relayed for 20 pings each way"
[ "$(node_get a relay_in_dgrams)" -ge 20 ] && [ "$(node_get b relay_out_dgrams)" -ge 20 ] ||
	fail "a sent $(node_get a relay_in_dgrams), b got $(node_get b relay_out_dgrams) relayed"
[ "$(rdv_get drops.relay_source)" = 0 ] && [ "$(rdv_get drops.relay_not_allowed)" = 0 ] ||
	fail "relay refusals: $(rdv status | grep drops)"
log "relayed $relayed datagrams ($(rdv_get counters.relayed_bytes) bytes in all)"
got=$(udp_stream a 10.77.0.2 2000 4000 1000)
[ "$got" -ge 1900 ] || fail "only $got of 2000 datagrams of a UDP stream came through the relay"
log "a UDP stream through the relay: $got of 2000 arrived; the server sent" \
	"$(rdv_get io.udp_train_dgrams) datagrams in $(rdv_get io.udp_trains) messages" \
	"(GSO $(rdv_get io.udp_gso)), $(rdv_get io.tx_failed) failed"

log "SIGUSR1 logs the status; SIGTERM exits 0 and removes the socket"
kill -USR1 "$RDV_PID"
poll 2 'grep -q "status: rendezvous server" "$TMP/rdv.log"' || true
grep -q "status:   nodes: 3 registered" "$TMP/rdv.log" || fail "SIGUSR1 logged no status"
[ -S "$TMP/ctl-s/rendezvous.sock" ] || fail "no control socket"
kill -TERM "$RDV_PID"
status=0
wait "$RDV_PID" || status=$?
[ "$status" -eq 0 ] || fail "yip-rendezvous exited with $status after SIGTERM"
grep -q "signal 15: shutting down" "$TMP/rdv.log" || fail "no shutdown line in the log"
[ ! -e "$TMP/ctl-s/rendezvous.sock" ] || fail "the control socket is still there"
status=0
rdv status >/dev/null 2>"$TMP/status.err" || status=$?
[ "$status" -eq 1 ] && grep -q "the server is not running" "$TMP/status.err" ||
	fail "status with no server: exit $status, $(cat "$TMP/status.err")"
log "ok"
