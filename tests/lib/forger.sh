# shellcheck shell=bash
# tests/lib/forger.sh: a namespace from which yip-initflood (tests/tools/initflood.c)
# attacks b, for the handshake-flood tests in tests/netns. Sourced after
# tests/netns/lib.sh and two_peers, not run.
#
#   namespace f  198.19.0.1 ==veth== 198.19.0.2  namespace b (198.18.0.2:51820, yipd)
#
# f reaches b's listening address through b, and owns 10.201.0.0/16 (every
# address in it is local to f: ip route add local), so the forger can send
# from any of them and receives b's replies, Cookies included.

FLOOD=${FLOOD:-$ROOT/build/yip-initflood}
# shellcheck disable=SC2034 # used by the tests that source this file
FORGER_NET=10.201.0.1 # the first of the forger's source addresses

# forger_ns: creates namespace f and its routes.
forger_ns() {
	[ -x "$FLOOD" ] || fail "$FLOOD not built (make build)"
	make_ns f
	ip link add "f$NSP" netns "$(ns f)" type veth peer name "g$NSP" netns "$(ns b)"
	in_ns f ip addr add 198.19.0.1/24 dev "f$NSP"
	in_ns b ip addr add 198.19.0.2/24 dev "g$NSP"
	in_ns f ip link set "f$NSP" up
	in_ns b ip link set "g$NSP" up
	in_ns f ip route add 198.18.0.0/24 via 198.19.0.2
	in_ns f ip route add local 10.201.0.0/16 dev lo
	in_ns b ip route add 10.201.0.0/16 via 198.19.0.1
}

# forger_start OUT ARGS...: runs yip-initflood in f against b's yipd with
# ARGS (which should hold --secs), its summary line in OUT and its errors in
# OUT.log; sets FORGER_PID.
forger_start() {
	local out=$1
	shift
	ip netns exec "$(ns f)" "$FLOOD" --to 198.18.0.2:51820 --key "$(pub_of b)" "$@" \
		>"$out" 2>"$out.log" &
	FORGER_PID=$!
	PIDS+=("$FORGER_PID")
}
