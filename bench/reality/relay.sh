#!/usr/bin/env bash
# What a REALITY front costs a relayed TCP stream, beside the UDP relay,
# on the same links and the same server (run as root: bench/reality/relay.sh
# [RUNS] [SECS]; defaults 5 and 5). Two public nodes a and b and a
# yip-rendezvous with a UDP port and a REALITY front (tests/lib/reality.sh's
# site behind it), relay budget raised so its rate limit is not measured.
#   udp:     a and b drop each other's UDP, so their path is the server's
#            UDP relay;
#   reality: a and b drop all UDP, so both reach the server through the
#            front (rendezvous=reality://...) and are relayed there.
# Each run is a fresh iperf3 TCP stream a -> b (the kernel's default
# congestion control, printed) for SECS s after one uncounted second; the
# modes alternate run by run. Prints every run, then median and minimum per
# mode and the ratio of the medians.
set -euo pipefail
RUNS=${1:-5}
SECS=${2:-5}
TEST=reality_relay_bench
. "$(dirname "$0")/../../tests/netns/lib.sh"
. "$ROOT/tests/lib/natyip.sh"
. "$ROOT/tests/lib/reality.sh"
command -v iperf3 >/dev/null || fail "iperf3 not found (scripts/deps.sh installs it)"

reality_lab a=203.0.113.21 b=203.0.113.22
reality_front --relay-rate 8G --relay-burst 256M
ny_node a 10.77.0.1
ny_node b 10.77.0.2
URL="reality://$S:443?pbk=$REALITY_PUB&sid=abcd12&sni=www.example.com"

# mode_conf MODE: both nodes' configs and UDP drops for MODE; restarts them.
mode_conf() {
	local n peer
	for n in a b; do
		case $n in a) peer=b ;; b) peer=a ;; esac
		[ -n "$(pid_of $n 2>/dev/null)" ] && { kill "$(pid_of $n)" 2>/dev/null || true; wait "$(pid_of $n)" 2>/dev/null || true; }
		in_ns "$n" nft delete table inet noudp 2>/dev/null || true
		in_ns "$n" nft delete table inet nopeer 2>/dev/null || true
		if [ "$1" = udp ]; then
			ny_conf "$n" rdv "$peer"
			in_ns "$n" nft -f - <<NFT
table inet nopeer {
	chain output { type filter hook output priority 0; ip daddr { 203.0.113.21, 203.0.113.22 } meta l4proto udp drop; }
	chain input { type filter hook input priority 0; ip saddr { 203.0.113.21, 203.0.113.22 } meta l4proto udp drop; }
}
NFT
		else
			ny_conf --line "rendezvous=$URL" --line "rendezvous_key=${NY_RDV_PUB[rdv]}" "$n" rdv "$peer"
			ny_drop_udp "$n"
		fi
	done
	start_yipd a
	start_yipd b
	# The server binds the tunnel's address: started again with each yipd.
	pkill -f "iperf3 -s -B 10.77.0.2" 2>/dev/null || true
	ip netns exec "$(ns b)" iperf3 -s -B 10.77.0.2 >"$TMP/iperf3-server.out" 2>&1 &
	PIDS+=($!)
	poll 20 'in_ns a ping -n -c 1 -W 1 10.77.0.2 >/dev/null 2>&1' 0.3 || fail "$1: a cannot reach b"
	[ "$(ny_kind a b)" = relayed ] || fail "$1: a's path is $(ny_peer a b path), not relayed"
}


log "congestion control: $(in_ns a sysctl -n net.ipv4.tcp_congestion_control)"
declare -A RES=()
for ((i = 1; i <= RUNS; i++)); do
	for mode in udp reality; do
		mode_conf "$mode"
		in_ns a iperf3 -c 10.77.0.2 -t "$SECS" -O 1 -J >"$TMP/iperf.json" 2>&1 ||
			fail "iperf3 failed: $(tail -n 3 "$TMP/iperf.json")"
		mbit=$(python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print("%.0f" % (j["end"]["sum_received"]["bits_per_second"] / 1e6) if "sum_received" in j["end"] else sys.exit(j.get("error", "no result")))' "$TMP/iperf.json") ||
			fail "$mode: iperf3: $mbit"
		RES[$mode]="${RES[$mode]:-} $mbit"
		log "run $i, $mode ($(ny_peer a b path)): $mbit Mbit/s"
	done
done
python3 - "${RES[udp]}" "${RES[reality]}" <<'PY'
import statistics, sys
u, r = [float(x) for x in sys.argv[1].split()], [float(x) for x in sys.argv[2].split()]
print("udp relay:     median %.0f, min %.0f Mbit/s (%s)" % (statistics.median(u), min(u), " ".join("%.0f" % x for x in u)))
print("reality relay: median %.0f, min %.0f Mbit/s (%s)" % (statistics.median(r), min(r), " ".join("%.0f" % x for x in r)))
print("reality / udp, medians: %.2f" % (statistics.median(r) / statistics.median(u)))
PY
