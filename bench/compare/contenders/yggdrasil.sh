# shellcheck shell=bash disable=SC2034  # sourced by run.sh, which reads these variables
# Yggdrasil 0.4.7: one node per namespace, A peers with B over TCP (the
# underlay is a single link, so no multicast discovery), default MTU. Inner
# traffic uses the nodes' key-derived IPv6 addresses (200::/7).
DESC="Yggdrasil"
PEER=
TUN_DEV=yg${NSP}

available() { command -v yggdrasil >/dev/null || { echo "yggdrasil not installed"; return 1; }; }
version() { pkg_version yggdrasil; }
# Yggdrasil asks for BBR on its peering sockets itself (it logs "Failed to
# set tcp_congestion_control to bbr" at debug level when it cannot); the
# notes say what the peering connection in A actually uses.
notes() {
	local cc
	cc=$(_ygg_ss | grep -o -E '\b(bbr|cubic|reno)\b' | head -n 1)
	echo "peers over TCP (peering connection's congestion control: ${cc:-unknown}), key-derived IPv6, default MTU"
}
# probe: the peering connection's TCP state in A while the 1-stream test runs.
probe() { _ygg_ss; }
_ygg_ss() { in_a ss -tinm "( sport = :12345 or dport = :12345 )"; }

up() {
	_ygg_conf a "" "tcp://$UL_B:12345" || return 1
	_ygg_conf b "tcp://$UL_B:12345" "" || return 1
	PEER=$(yggdrasil -useconffile "$WORK/b.json" -address 2>/dev/null)
	[ -n "$PEER" ] || { FAIL_REASON="yggdrasil -address printed nothing"; return 1; }
	daemon "$NS_B" yggdrasil-b yggdrasil -useconffile "$WORK/b.json" -logto stdout
	# A dials once at start and only retries much later: B must listen first.
	wait_listen "$NS_B" t 12345 10 || { daemons_alive; FAIL_REASON=${FAIL_REASON:-"B does not listen on 12345"}; return 1; }
	daemon "$NS_A" yggdrasil-a yggdrasil -useconffile "$WORK/a.json" -logto stdout
	wait_ping "$PEER" 30
}
down() { stop_daemons; }

# _ygg_conf NAME LISTEN PEER: a fresh key pair with the suite's settings.
_ygg_conf() {
	umask 077
	yggdrasil -genconf -json >"$WORK/$1.gen.json" 2>"$WORK/$1.gen.err" ||
		{ FAIL_REASON="yggdrasil -genconf failed"; return 1; }
	"$PY" - "$WORK/$1.gen.json" "$WORK/$1.json" "$2" "$3" "$TUN_DEV" <<'PYCONF'
import json, sys
src, dst, listen, peer, dev = sys.argv[1:6]
c = json.load(open(src))
c["Listen"] = [listen] if listen else []
c["Peers"] = [peer] if peer else []
c["MulticastInterfaces"] = []
c["AdminListen"] = "none"
c["IfName"] = dev
json.dump(c, open(dst, "w"), indent=2)
PYCONF
}
